package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redmux/redmux/bench/internal/hlog"
	"github.com/redmux/redmux/bench/internal/report"
	"github.com/redmux/redmux/fakeserver"
	"github.com/stretchr/testify/require"
)

// Issue 12 item 8: two load generators given the same -start-at measure in
// the same windows (strategy i at start + i*(warmup + d + 2s)), and merge
// combines their interval logs by tag, with -start/-end/-tag filters, into a
// merged hlog, JSON, CSV and SVG. The timing assertions are lower bounds (no
// window can open before its slot), which a slow machine cannot break.
func TestStartAtAndMerge(t *testing.T) {
	c, err := fakeserver.StartCluster(3, fakeserver.Config{})
	require.NoError(t, err)
	defer c.Close()
	dir := t.TempDir()
	startAt := time.Now().Add(1500 * time.Millisecond).Truncate(time.Millisecond)
	const warmup, d = 100 * time.Millisecond, 600 * time.Millisecond
	reps := make([]*report.Report, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for m := 0; m < 2; m++ {
		wg.Add(1)
		go func(m int) {
			defer wg.Done()
			cfg, err := ParseArgs([]string{"-nodes", strings.Join(c.Addrs(), ","), "-strategy", "mux,fanout", "-fresh-nodes", "-c", "2", "-d", d.String(),
				"-warmup", warmup.String(), "-start-at", fmt.Sprintf("%.3f", float64(startAt.UnixMilli())/1e3), "-quiet", "-out", "",
				"-hlog", filepath.Join(dir, fmt.Sprintf("m%d.hlog", m))}, noEnv)
			if err != nil {
				errs[m] = err
				return
			}
			reps[m], errs[m] = Run(context.Background(), cfg, Options{})
		}(m)
	}
	wg.Wait()
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	slot1 := startAt.Add(warmup + d + startAtGap)
	var muxCount, fanoutCount int64
	for _, rep := range reps {
		require.Equal(t, startAt.UTC().Format(time.RFC3339Nano), rep.Config.StartAt)
		for i, s := range rep.Strategies {
			began, err := time.Parse(time.RFC3339Nano, s.StartedAt)
			require.NoError(t, err)
			slot := []time.Time{startAt, slot1}[i]
			require.False(t, began.Before(slot.Add(warmup)), "%s measured from %v, before its slot %v + warm-up", s.Name, began, slot)
		}
		muxCount += rep.Strategies[0].AcquireRelease.Count
		fanoutCount += rep.Strategies[1].AcquireRelease.Count
	}
	files := []string{filepath.Join(dir, "m0.hlog"), filepath.Join(dir, "m1.hlog")}

	// Every tag, then one strategy's tags by glob.
	out := filepath.Join(dir, "merged")
	var stdout, stderr bytes.Buffer
	require.Equal(t, ExitOK, Main(append([]string{"merge", "-out", out}, files...), &stdout, &stderr, noEnv), stderr.String())
	require.Contains(t, stdout.String(), "from 2 files")
	var mr report.MergeResult
	require.NoError(t, json.Unmarshal([]byte(readFile(t, filepath.Join(out, fileMergedJSON))), &mr))
	counts := map[string]int64{}
	for _, tg := range mr.Tags {
		counts[tg.Tag] = tg.Latency.Count
		if strings.HasSuffix(tg.Tag, ".acquire_release") {
			require.Equal(t, 2, tg.Files, tg.Tag)
		}
	}
	require.Equal(t, muxCount, counts["mux.acquire_release"])
	require.Equal(t, fanoutCount, counts["fanout.acquire_release"])
	// The merged hlog holds exactly what was merged.
	f, err := os.Open(filepath.Join(out, fileMergedHlog))
	require.NoError(t, err)
	hs, err := hlog.Read(f)
	f.Close()
	require.NoError(t, err)
	require.Len(t, hs, mr.Intervals)
	back, _ := hlog.MergeTagged(hs)
	for tag, n := range counts {
		require.Equal(t, n, back[tag].TotalCount(), tag)
	}
	require.NoError(t, xml.Unmarshal([]byte(readFile(t, filepath.Join(out, fileMergedPlot))), new(struct{})))
	require.Len(t, strings.Split(strings.TrimSpace(readFile(t, filepath.Join(out, fileMergedCSV))), "\n"), 1+len(mr.Tags))

	// -start at strategy 1's slot keeps only its windows, from both files.
	stdout.Reset()
	require.Equal(t, ExitOK, Main(append([]string{"merge", "-start", slot1.UTC().Format(time.RFC3339Nano), "-json", "-"}, files...), &stdout, &stderr, noEnv), stderr.String())
	var late report.MergeResult
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &late))
	require.NotEmpty(t, late.Tags)
	for _, tg := range late.Tags {
		require.True(t, strings.HasPrefix(tg.Tag, "fanout."), "tag %s is from before -start", tg.Tag)
	}
	require.Positive(t, late.Skipped)
	// -end at the same instant keeps the other strategy; -tag selects.
	stdout.Reset()
	require.Equal(t, ExitOK, Main(append([]string{"merge", "-end", slot1.UTC().Format(time.RFC3339Nano), "-tag", "*.acquire_release,*.release", "-csv", "-"}, files...), &stdout, &stderr, noEnv), stderr.String())
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	require.Len(t, lines, 3, stdout.String())
	require.True(t, strings.HasPrefix(lines[1], "mux.acquire_release,"+fmt.Sprint(muxCount)+","), lines[1])
	require.True(t, strings.HasPrefix(lines[2], "mux.release,"), lines[2])

	// A relative -start beyond the logs leaves nothing: an error, exit 1.
	stderr.Reset()
	require.Equal(t, ExitFailure, Main(append([]string{"merge", "-start", "1h"}, files...), &stdout, &stderr, noEnv))
	require.Contains(t, stderr.String(), "no interval is left")
}

func TestStartAtAndMergeFlagErrors(t *testing.T) {
	for _, args := range [][]string{{"-start-at", "2001-01-01T00:00:00Z"}, {"-start-at", "soon"}, {"-start-at", fmt.Sprint(time.Now().Add(48 * time.Hour).Unix())},
		{"-start-at", fmt.Sprint(time.Now().Add(time.Minute).Unix()), "-n", "10"}} {
		_, err := ParseArgs(args, noEnv)
		require.ErrorIs(t, err, ErrUsage, "%v", args)
	}
	c, err := ParseArgs([]string{"-start-at", time.Now().Add(time.Minute).UTC().Format(time.RFC3339)}, noEnv)
	require.NoError(t, err)
	require.False(t, c.StartAt.IsZero())
	for _, args := range [][]string{{"-start", "x", "f"}, {"-end", "-1s", "f"}, {"-tag", "[", "f"}, {"f", "-start", "1s"}, {"-json", "-", "-csv", "-", "f"}, {}} {
		_, err := parseMergeArgs(args)
		require.ErrorIs(t, err, ErrUsage, "%v", args)
	}
	var out, errb bytes.Buffer
	require.Equal(t, ExitOK, Main([]string{"merge", "-h"}, &out, &errb, noEnv))
	require.Contains(t, out.String(), "-start")
	require.Contains(t, out.String(), "-tag")
}
