package bench

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redmux/redmux/bench/internal/report"
	"github.com/redmux/redmux/bench/internal/stats"
	"github.com/redmux/redmux/bench/load"
	"github.com/stretchr/testify/require"
)

func writeJSONFile(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	f, err := os.CreateTemp(t.TempDir(), "*.json")
	require.NoError(t, err)
	_, err = f.Write(b)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	return f.Name()
}

func runReport(opsPerSec, p99 float64) *report.Report {
	return &report.Report{Strategies: []*report.StrategyResult{{Name: "mux", Ops: 1000, OpsPerSec: opsPerSec, CPUUsPerOp: 20,
		AcquireRelease: report.Latency{Count: 1000, P50Us: 100, P99Us: p99, P999Us: 2 * p99}}}}
}

func rowOf(t *testing.T, rows []comparisonRow, metric string) comparisonRow {
	t.Helper()
	for _, r := range rows {
		if r.Metric == metric {
			return r
		}
	}
	t.Fatalf("no row %q in %+v", metric, rows)
	return comparisonRow{}
}

// Issue 25 item 7: compare gives per-metric ratios and flags only changes
// larger than the noise: -noise with one run a side, each side's measured
// spread with repeated runs.
func TestCompareFlagsChangesLargerThanTheNoise(t *testing.T) {
	a := writeJSONFile(t, runReport(1000, 500))
	b := writeJSONFile(t, runReport(1200, 510))
	cmp, err := runCompare(&compareConfig{Old: []string{a}, New: []string{b}, Noise: 0.05})
	require.NoError(t, err)
	require.False(t, cmp.Sweep)
	rows := cmp.Rows
	ops := rowOf(t, rows, "ops/s")
	require.InDelta(t, 1.2, ops.Ratio, 1e-9)
	require.Equal(t, stats.NoTest, ops.Verdict, "one run a side: no verdict (issue 48)")
	require.True(t, ops.BeyondNoise)
	require.Equal(t, -1.0, ops.OldCV, "one run: spread not measured")
	require.False(t, rowOf(t, rows, "p99").BeyondNoise, "2% is within 5%")

	// Repeated runs (issue 36 item 3: benchstat's test): ops/s spread 30%,
	// so a 20% change is not significant; p99 1.8x with little spread is
	// significant under Welch's t-test, while the U test (benchstat's
	// default) cannot reach p < 0.05 with 3 runs a side and says so.
	olds := []string{a, writeJSONFile(t, runReport(1300, 501)), writeJSONFile(t, runReport(700, 502))}
	news := []string{writeJSONFile(t, runReport(1200, 900)), writeJSONFile(t, runReport(1250, 910)), writeJSONFile(t, runReport(1150, 950))}
	cmp, err = runCompare(&compareConfig{Old: olds, New: news, Noise: 0.05, Alpha: 0.05, Test: "ttest"})
	require.NoError(t, err)
	rows = cmp.Rows
	ops = rowOf(t, rows, "ops/s")
	require.Greater(t, ops.OldCV, 0.25)
	require.Equal(t, "~", ops.Verdict, "%+v", ops)
	require.Greater(t, ops.P, 0.05)
	p99 := rowOf(t, rows, "p99")
	require.Equal(t, "worse", p99.Verdict, "p99 1.8x with little spread: %+v", p99)
	require.Less(t, p99.P, 0.05)
	cmp, err = runCompare(&compareConfig{Old: olds, New: news, Noise: 0.05, Alpha: 0.05, Test: "utest"})
	require.NoError(t, err)
	p99 = rowOf(t, cmp.Rows, "p99")
	require.Equal(t, "~", p99.Verdict, "%+v", p99)
	require.InDelta(t, 0.1, p99.P, 1e-9, "3+3 runs: the U test's smallest p-value")
	require.Contains(t, p99.PNote, "need >= 4 samples")
	// Four runs a side reach it.
	olds = append(olds, writeJSONFile(t, runReport(1000, 503)))
	news = append(news, writeJSONFile(t, runReport(1210, 920)))
	cmp, err = runCompare(&compareConfig{Old: olds, New: news, Noise: 0.05, Alpha: 0.05, Test: "utest"})
	require.NoError(t, err)
	p99 = rowOf(t, cmp.Rows, "p99")
	require.Equal(t, "worse", p99.Verdict, "%+v", p99)
	require.Less(t, p99.P, 0.05)
	require.Empty(t, cmp.Settings, "the same settings")

	// Sweeps: the capacity at the knee.
	sw := func(knee float64, slo string) string {
		k := &report.SweepStep{TargetRate: knee, Held: true, Latency: report.Latency{P99Us: 900}, ClientCPUUsPerOp: 30}
		return writeJSONFile(t, &report.SweepReport{Strategies: []*report.SweepStrategy{{Name: "mux", SLO: slo, Steps: []*report.SweepStep{k}, Knee: k, KneeRate: knee, Saturated: true}}})
	}
	cmp, err = runCompare(&compareConfig{Old: []string{sw(1000, "p99<20ms")}, New: []string{sw(500, "p99<20ms")}, Noise: 0.05})
	require.NoError(t, err)
	require.True(t, cmp.Sweep)
	require.Empty(t, cmp.Warnings)
	require.Equal(t, stats.NoTest, rowOf(t, cmp.Rows, "capacity ops/s").Verdict)
	require.True(t, rowOf(t, cmp.Rows, "capacity ops/s").BeyondNoise)
	// Sweeps judged by different objectives are flagged as not comparable.
	cmp, err = runCompare(&compareConfig{Old: []string{sw(1000, "p99<20ms")}, New: []string{sw(500, "p99<5ms")}, Noise: 0.05})
	require.NoError(t, err)
	require.Len(t, cmp.Warnings, 1)
	require.Contains(t, cmp.Warnings[0], "different objectives")
	_, err = runCompare(&compareConfig{Old: []string{sw(1000, "")}, New: []string{a}, Noise: 0.05})
	require.Error(t, err)

	var out, errb bytes.Buffer
	require.Equal(t, ExitOK, Main([]string{"compare", a, b}, &out, &errb, noEnv), errb.String())
	require.Contains(t, out.String(), "1.20x")
	require.NotContains(t, out.String(), "better")
	require.Contains(t, out.String(), "mux ops/s 1.20x")
	require.NotContains(t, out.String(), "WARNING")
	require.Equal(t, ExitUsage, Main([]string{"compare", a}, &out, &errb, noEnv))
	require.Equal(t, ExitFailure, Main([]string{"compare", a, filepath.Join(t.TempDir(), "missing.json")}, &out, &errb, noEnv))
	out.Reset()
	require.Equal(t, ExitOK, Main([]string{"compare", "-h"}, &out, &errb, noEnv))
	require.Contains(t, out.String(), "-noise")
}

// Issue 36 item 3: compare says loudly when the two sides ran different
// settings (-c here), and gives p-values for repeated runs of the same
// settings.
func TestCompareWarnsOnDifferentSettingsAndGivesPValues(t *testing.T) {
	mk := func(workers int, ops float64) string {
		r := runReport(ops, 500)
		r.Config = report.ReportConfig{Workers: workers, Workload: load.WorkloadAcquireRelease, Strategies: []string{"mux"}, TargetKind: "embedded",
			Nodes: []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"}, Loop: "closed", DurationS: 5, Keys: 10000}
		return writeJSONFile(t, r)
	}
	var out, errb bytes.Buffer
	require.Equal(t, ExitOK, Main([]string{"compare", mk(16, 1000), mk(64, 1100)}, &out, &errb, noEnv), errb.String())
	require.True(t, strings.HasPrefix(out.String(), "WARNING: the runs compared ran different settings"), out.String())
	require.Contains(t, out.String(), "-c: 16 (")
	require.Contains(t, out.String(), ") vs 64 (")

	// Identical settings, 4 runs a side: p-values, no warning. (An
	// embedded cluster's ports differ every run: not a setting.)
	var olds, news []string
	for i := 0; i < 4; i++ {
		olds = append(olds, mk(16, 1000+float64(i)))
		news = append(news, mk(16, 1500+float64(i)))
	}
	out.Reset()
	require.Equal(t, ExitOK, Main([]string{"compare", strings.Join(olds, ","), strings.Join(news, ",")}, &out, &errb, noEnv), errb.String())
	require.NotContains(t, out.String(), "WARNING", out.String())
	require.Contains(t, out.String(), "p=0.029", out.String())
	require.Contains(t, out.String(), "better")
	require.Contains(t, out.String(), "Mann-Whitney U")
	require.Equal(t, ExitUsage, Main([]string{"compare", "-test", "ztest", olds[0], news[0]}, &out, &errb, noEnv))
}

// Issue 48 item 1: two single-run sweeps of one command (the issue's
// case: "8 of 8 changes significant", better/worse) get no verdict, say
// "n=1: no significance" per row, in the headline and in the summary,
// and a strategy with no capacity on one side is listed ("none"), not
// dropped.
func TestCompareOneRunASideGivesNoVerdictAndListsEveryStrategy(t *testing.T) {
	sw := func(mux, seq float64) string {
		rep := &report.SweepReport{}
		for _, st := range []struct {
			name string
			knee float64
		}{{"seq", seq}, {"mux", mux}} {
			ss := &report.SweepStrategy{Name: st.name, SLO: "p99<5ms"}
			if st.knee > 0 {
				k := &report.SweepStep{TargetRate: st.knee, Held: true, Latency: report.Latency{P99Us: 900}, ClientCPUUsPerOp: 30}
				ss.Steps, ss.Knee, ss.KneeRate = []*report.SweepStep{k}, k, st.knee
			}
			rep.Strategies = append(rep.Strategies, ss)
		}
		return writeJSONFile(t, rep)
	}
	old, new := sw(48100, 705), sw(30000, 0)
	var out, errb bytes.Buffer
	require.Equal(t, ExitOK, Main([]string{"compare", old, new}, &out, &errb, noEnv), errb.String())
	s := out.String()
	for _, bad := range []string{"significant (", "better", "worse", "changes significant"} {
		require.NotContains(t, s, bad, s)
	}
	lines := strings.Split(strings.TrimSpace(s), "\n")
	require.True(t, strings.HasPrefix(lines[1], "n=1: no significance"), "headline: %s", s)
	require.True(t, strings.HasPrefix(lines[len(lines)-1], "n=1: no significance"), "summary: %s", s)
	require.Contains(t, s, "mux capacity ops/s 0.62x")
	var seqRow, muxRow string
	for _, l := range lines {
		if strings.HasPrefix(l, "seq ") {
			seqRow = l
		}
		if strings.HasPrefix(l, "mux ") && strings.Contains(l, "capacity") {
			muxRow = l
		}
	}
	require.Contains(t, seqRow, "705", s)
	require.Contains(t, seqRow, "none on the new side", s)
	require.Contains(t, muxRow, "n=1: no significance (beyond -noise)", s)

	// One run a side where no strategy had capacity on one side: still
	// said, first and last.
	out.Reset()
	require.Equal(t, ExitOK, Main([]string{"compare", sw(0, 0), new}, &out, &errb, noEnv), errb.String())
	lines = strings.Split(strings.TrimSpace(out.String()), "\n")
	require.True(t, strings.HasPrefix(lines[1], "n=1: no significance: one run a side, so no p-value exists"), out.String())
	require.True(t, strings.HasPrefix(lines[len(lines)-1], "n=1: no significance"), out.String())
	require.Contains(t, out.String(), "none on the old side")

	// A strategy only the new side ran is listed too.
	cmp, err := runCompare(&compareConfig{Old: []string{writeJSONFile(t, runReport(1000, 500))}, New: []string{writeJSONFile(t, &report.Report{Strategies: []*report.StrategyResult{
		runReport(1000, 500).Strategies[0], {Name: "seq", Ops: 10, OpsPerSec: 10, AcquireRelease: report.Latency{Count: 10}}}})}, Noise: 0.05})
	require.NoError(t, err)
	seq := cmp.Rows[len(cmp.Rows)-1]
	require.Equal(t, "seq", seq.Strategy)
	require.True(t, seq.OldNone)
	require.Equal(t, "none on the old side", seq.Verdict)
}
