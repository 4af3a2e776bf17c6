package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redmux/redmux/bench/internal/report"

	"github.com/stretchr/testify/require"
)

// Issue 36 item 5: render redraws a directory written by this version
// byte for byte (plots and report from the recorded files alone), and
// writes none of the data files.
func TestRenderRedrawsTheSameFiles(t *testing.T) {
	dir := t.TempDir()
	run, sweep := filepath.Join(dir, "run"), filepath.Join(dir, "sweep")
	var out, errb bytes.Buffer
	require.Equal(t, ExitOK, Main([]string{"-fake", "1", "-strategy", "seq,mux", "-c", "2", "-n", "300", "-warmup", "0s",
		"-workload", "contended", "-keys", "1", "-quiet", "-out", run}, &out, &errb, noEnv), errb.String())
	require.Equal(t, ExitOK, Main([]string{"sweep", "-fake", "1", "-strategy", "mux", "-c", "4", "-rates", "100,200", "-refine", "0",
		"-step", "200ms", "-warmup", "0s", "-quiet", "-out", sweep}, &out, &errb, noEnv), errb.String())

	drawn := map[string][]string{
		run:   {report.FilePlot, report.FilePlotAcquire, report.FileReport},
		sweep: {report.FileSweepPlot, report.FileSweepReport},
	}
	before := map[string][]byte{}
	for d := range drawn {
		names, err := os.ReadDir(d)
		require.NoError(t, err)
		for _, n := range names {
			p := filepath.Join(d, n.Name())
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			before[p] = b
		}
		for _, f := range drawn[d] {
			require.NoError(t, os.WriteFile(filepath.Join(d, f), []byte("stale"), 0o644))
		}
	}
	out.Reset()
	errb.Reset()
	require.Equal(t, ExitOK, Main([]string{"render", run, sweep}, &out, &errb, noEnv), errb.String())
	require.Empty(t, errb.String())
	require.Contains(t, out.String(), run+": redrew percentiles.svg, percentiles-acquire.svg, report.md\n")
	require.Contains(t, out.String(), sweep+": redrew sweep.svg, sweep.md\n")
	require.NotContains(t, out.String(), "kept")
	for p, b := range before {
		got, err := os.ReadFile(p)
		require.NoError(t, err)
		require.Equal(t, string(b), string(got), "%s differs after render", p)
	}
	// The contended run's acquire plot draws the refused attempts from
	// the interval log.
	require.Contains(t, string(before[filepath.Join(run, report.FilePlotAcquire)]), "not acquired")
}

// A JSON written before a field the report shows keeps its report; plots
// that lack their data, or whose interval log disagrees with the JSON, are
// refused and nothing in the directory is written.
func TestRenderRefusesWhatItCannotRedraw(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	var out, errb bytes.Buffer
	// A generous node timeout (a loaded machine fails a few operations
	// within the default 50ms); the count check below takes the run's own
	// count of failures either way.
	require.Equal(t, ExitOK, Main([]string{"-fake", "1", "-strategy", "mux", "-c", "2", "-n", "200", "-warmup", "0s", "-timeout", "1s", "-quiet", "-out", run}, &out, &errb, noEnv), errb.String())
	edit := func(path string, f func(map[string]any)) {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		var doc map[string]any
		require.NoError(t, json.Unmarshal(b, &doc))
		f(doc)
		b, err = json.Marshal(doc)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, b, 0o644))
	}
	strategy0 := func(doc map[string]any) map[string]any { return doc["strategies"].([]any)[0].(map[string]any) }
	summary := filepath.Join(run, report.FileSummary)

	// An older summary.json: no harness figure. The plots are redrawn,
	// report.md is kept and the field named.
	edit(summary, func(doc map[string]any) { delete(strategy0(doc), "harness_cpu_us_per_op") })
	require.NoError(t, os.WriteFile(filepath.Join(run, report.FileReport), []byte("old report"), 0o644))
	out.Reset()
	require.Equal(t, ExitOK, Main([]string{"render", run}, &out, &errb, noEnv), errb.String())
	require.Contains(t, out.String(), "redrew percentiles.svg, percentiles-acquire.svg; kept report.md: summary.json lacks strategies[].harness_cpu_us_per_op")
	b, err := os.ReadFile(filepath.Join(run, report.FileReport))
	require.NoError(t, err)
	require.Equal(t, "old report", string(b))

	// A count the interval log does not hold: refused, nothing written.
	require.NoError(t, os.WriteFile(filepath.Join(run, report.FilePlot), []byte("old plot"), 0o644))
	var failed int
	edit(summary, func(doc map[string]any) {
		fl := strategy0(doc)["failed_latency"].(map[string]any)
		failed = int(fl["count"].(float64))
		fl["count"] = failed + 7
	})
	out.Reset()
	errb.Reset()
	require.Equal(t, ExitFailure, Main([]string{"render", run}, &out, &errb, noEnv))
	require.Contains(t, errb.String(), fmt.Sprintf("cannot redraw: tag mux.failed holds %d values, summary.json counts %d", failed, failed+7))
	b, err = os.ReadFile(filepath.Join(run, report.FilePlot))
	require.NoError(t, err)
	require.Equal(t, "old plot", string(b))

	// A field a plot is drawn from is missing: refused, named.
	edit(summary, func(doc map[string]any) { delete(strategy0(doc), "acquire") })
	errb.Reset()
	require.Equal(t, ExitFailure, Main([]string{"render", run}, &out, &errb, noEnv))
	require.Contains(t, errb.String(), "summary.json lacks strategies[].acquire.count")

	// No report at all; no directory: usage.
	errb.Reset()
	require.Equal(t, ExitFailure, Main([]string{"render", dir}, &out, &errb, noEnv))
	require.Contains(t, errb.String(), "neither summary.json nor sweep.json")
	require.Equal(t, ExitUsage, Main([]string{"render"}, &out, &errb, noEnv))
	out.Reset()
	require.Equal(t, ExitOK, Main([]string{"render", "-h"}, &out, &errb, noEnv))
	require.True(t, strings.HasPrefix(out.String(), "redmux-bench render:"))
}
