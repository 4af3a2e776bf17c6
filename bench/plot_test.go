package bench

import (
	"regexp"
	"strings"
	"testing"

	"github.com/redmux/redmux/bench/internal/report"
	"github.com/redmux/redmux/bench/load"
)

// The percentile plots' subtitle names the workload and -c, and a
// saturated strategy is marked in its legend and the subtitle.
func TestPlotSubtitleAndSaturation(t *testing.T) {
	res := func(name string, saturated bool) *report.StrategyResult {
		h := load.NewHists()
		for i := int64(1); i <= 100; i++ {
			for _, m := range []int{load.MAcquire, load.MRelease, load.MAcquireRelease} {
				_ = h[m].RecordValue(i * 10_000)
			}
		}
		return &report.StrategyResult{Name: name, Saturated: saturated, Hists: h}
	}
	cfg := report.ReportConfig{Target: "embedded fake cluster, 3 nodes", Workload: load.WorkloadContended, Workers: 24, Rate: 5000, Loop: "open"}
	tests := []struct {
		name      string
		strats    []*report.StrategyResult
		warns     int
		saturated string // in the subtitle ("" = no mark)
	}{
		{"none saturated", []*report.StrategyResult{res("seq", false), res("mux", false)}, 0, ""},
		{"one saturated", []*report.StrategyResult{res("seq", true), res("mux", false)}, 1, "SATURATED: seq"},
		{"both saturated", []*report.StrategyResult{res("seq", true), res("mux", true)}, 2, "SATURATED: seq, mux"},
	}
	for _, tc := range tests {
		for _, metric := range []string{load.MetricAcquireRelease, load.MetricAcquire} {
			var b strings.Builder
			if err := report.WritePlot(&b, &report.Report{Config: cfg, Strategies: tc.strats}, metric); err != nil {
				t.Fatal(err)
			}
			svg := b.String()
			sub := svgSubtitle(t, svg)
			if !strings.Contains(sub, "workload contended, 24 workers (-c)") {
				t.Errorf("%s %s: subtitle %q lacks the workload and -c", tc.name, metric, sub)
			}
			if n := strings.Count(svg, `class="warn"`); n != tc.warns {
				t.Errorf("%s %s: %d legend warnings, want %d", tc.name, metric, n, tc.warns)
			}
			if tc.saturated == "" && strings.Contains(sub, "SATURATED") || tc.saturated != "" && !strings.Contains(sub, tc.saturated) {
				t.Errorf("%s %s: subtitle %q, want %q", tc.name, metric, sub, tc.saturated)
			}
		}
	}
}

// The sweep plot's subtitle names the workload and -c; every saturated
// step drawn gets a cross.
func TestSweepPlotMarksSaturatedSteps(t *testing.T) {
	step := func(rate float64, held, saturated, repeated bool) *report.SweepStep {
		return &report.SweepStep{TargetRate: rate, OpsPerSec: rate * 0.9, Ops: 100, Held: held, Saturated: saturated, Repeated: repeated,
			SLOUs: 1000, Latency: report.Latency{P50Us: 500}}
	}
	ss := &report.SweepStrategy{Name: "mux", SLOPct: 99, SLOBudgetUs: 2000, Steps: []*report.SweepStep{
		step(100, true, false, false), step(200, true, false, false), step(400, false, true, true),
		step(400, false, true, false), step(300, false, true, false),
	}}
	rep := &report.SweepReport{Config: report.ReportConfig{Target: "t", Workload: load.WorkloadAcquireRelease, Workers: 64, DurationS: 2}, Strategies: []*report.SweepStrategy{ss}}
	var b strings.Builder
	if err := report.WriteSweepPlot(&b, rep); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	if n := strings.Count(svg, `class="saturated"`); n != 2 { // the repeated step is not drawn
		t.Errorf("%d saturated marks, want 2", n)
	}
	if sub := svgSubtitle(t, svg); !strings.Contains(sub, "workload acquire-release, 64 workers (-c)") {
		t.Errorf("subtitle %q", sub)
	}
	if !strings.Contains(svg, "saturated (did not keep up)") {
		t.Error("no legend for the saturated mark")
	}
}

// svgSubtitle returns the text of the plot's subtitle: the grey lines
// under the title (one, or two when it was broken to fit the width).
func svgSubtitle(t *testing.T, svg string) string {
	t.Helper()
	var lines []string
	for _, m := range regexp.MustCompile(`<text x="\d+" y="(?:42|55)" font-size="[0-9.]+" fill="#555">([^<]*)</text>`).FindAllStringSubmatch(svg, -1) {
		lines = append(lines, m[1])
	}
	if len(lines) == 0 {
		t.Fatal("no subtitle")
	}
	return strings.Join(lines, " ")
}
