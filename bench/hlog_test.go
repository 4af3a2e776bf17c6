package bench

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/redmux/redmux/bench/internal/hdrtest"
	"github.com/redmux/redmux/bench/internal/hlog"
	"github.com/redmux/redmux/bench/internal/report"
	"github.com/redmux/redmux/bench/load"
	"github.com/stretchr/testify/require"
)

func TestMergeTwoLogsEqualsAllValues(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	dir := t.TempDir()
	all := map[string]*hdr.Histogram{"fanout.acquire": load.NewHistogram(), "fanout.release": load.NewHistogram()}
	var files []string
	for m := 0; m < 2; m++ { // two load-generator machines
		var buf bytes.Buffer
		start := time.UnixMilli(1_700_000_000_000 + int64(m)*7)
		hw := hlog.NewWriter(&buf, start)
		for i := 0; i < 4; i++ {
			for tag, a := range all {
				from := start.Add(time.Duration(i) * time.Second)
				require.NoError(t, hw.Write(tag, hdrtest.RandomHist(r, 300+m*50, a), from, from.Add(time.Second)))
			}
		}
		p := filepath.Join(dir, "m"+string(rune('0'+m))+".hlog")
		require.NoError(t, os.WriteFile(p, buf.Bytes(), 0o644))
		files = append(files, p)
	}
	merged, n, err := hlog.MergeFiles(files)
	require.NoError(t, err)
	require.Equal(t, 16, n)
	require.Len(t, merged, 2)
	for tag, a := range all {
		require.True(t, a.Equals(merged[tag]), "%s: merged logs differ from the histogram of all values", tag)
	}

	var out, errb bytes.Buffer
	require.Equal(t, ExitOK, Main(append([]string{"merge"}, files...), &out, &errb, noEnv))
	require.Empty(t, errb.String())
	require.Contains(t, out.String(), "merged 16 interval histograms from 2 files")
	require.Contains(t, out.String(), "fanout.acquire")
	p99 := report.Summarize(all["fanout.release"]).P99Us
	require.Contains(t, out.String(), fmt.Sprintf("%.1f", p99))
}

func TestRecordClampsAndSummarize(t *testing.T) {
	h := load.NewHistogram()
	load.Record(h, 10*time.Nanosecond) // below 1us: counted at the floor
	load.Record(h, 2*time.Minute)      // above 60s: counted at the ceiling
	load.Record(h, 500*time.Microsecond)
	require.Equal(t, int64(3), h.TotalCount())
	l := report.Summarize(h)
	require.InDelta(t, 1.0, l.MinUs, 0.5) // 1us floor, 512ns resolution there
	require.InDelta(t, 500, l.P50Us, 1)
	require.InDelta(t, 60e6, l.MaxUs, 60e6*0.001)
	require.Equal(t, report.Latency{}, report.Summarize(load.NewHistogram()))
}
