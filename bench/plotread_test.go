package bench

import (
	"bytes"
	"encoding/xml"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redmux/redmux/bench/internal/plot"
	"github.com/redmux/redmux/bench/internal/report"
	"github.com/stretchr/testify/require"
)

// Issue 36 item 5: sweep plots a reader can read.
func TestSweepPlotReadable(t *testing.T) {
	mk := func(name string, rates ...float64) *report.SweepStrategy {
		ss := &report.SweepStrategy{Name: name, SLOPct: 99, SLOBudgetUs: 5000}
		for _, r := range rates {
			ss.Steps = append(ss.Steps, &report.SweepStep{TargetRate: r, OpsPerSec: r, Ops: int64(r), Held: true, SLOUs: 1000, Latency: report.Latency{P50Us: 400}})
		}
		ss.FindKnee()
		return ss
	}
	seq := mk("seq", 300, 600, 900, 1200)
	seq.Steps = append(seq.Steps, &report.SweepStep{TargetRate: 1500, OpsPerSec: 1500, Ops: 1500, FailedShare: 0.2, SLOUs: 60000, Why: "20.0% of operations failed"})
	mux := mk("mux", 5000, 10000, 20000, 40000)
	mux.Steps = append(mux.Steps, &report.SweepStep{TargetRate: 44000, OpsPerSec: 30000, Ops: 30000, Saturated: true, SLOUs: 90000})
	seq.FindKnee()
	mux.FindKnee()
	rep := &report.SweepReport{Strategies: []*report.SweepStrategy{seq, mux}, Config: report.ReportConfig{
		Target:   "3 Redis masters given with -nodes (redis-a.internal.example.com:6379, redis-b.internal.example.com:6379, redis-c.internal.example.com:6379)",
		Title:    "A capacity sweep with a title long enough to run past the right edge of the plot at sixteen pixels",
		Workload: "acquire-release", Workers: 64, DurationS: 2}}
	var b bytes.Buffer
	require.NoError(t, report.WriteSweepPlot(&b, rep))
	svg := b.String()
	require.NoError(t, xml.Unmarshal(b.Bytes(), new(struct{})))

	// Log rate axis: seq's steps (300-1,500 ops/s) take a fair share of the
	// width next to mux's (5k-40k), not its left 5%.
	// The first circles drawn are seq's five steps, in rate order.
	var xs []float64
	for _, m := range regexp.MustCompile(`<circle cx="([0-9.]+)" cy="[0-9.]+" r="3.5"`).FindAllStringSubmatch(svg, -1) {
		v, _ := strconv.ParseFloat(m[1], 64)
		xs = append(xs, v)
	}
	require.GreaterOrEqual(t, len(xs), 10)
	require.Contains(t, svg, "log scale")
	seqSpan := xs[4] - xs[0]
	require.Greater(t, seqSpan, 0.15*(860-80-210), "seq's steps (300-1,500 ops/s) span %.0f px of 570: %v", seqSpan, xs)
	require.Greater(t, xs[0], 80.0)
	require.Less(t, xs[9], 860.0-210)

	// Nothing runs past the right edge: every text's estimated width fits.
	txt := regexp.MustCompile(`<text x="([0-9.]+)" y="[0-9.]+"(?: text-anchor="([a-z]+)")?(?: font-size="([0-9.]+)")?[^>]*>([^<]*)</text>`)
	for _, m := range txt.FindAllStringSubmatch(svg, -1) {
		x, _ := strconv.ParseFloat(m[1], 64)
		size := 12.0
		if m[3] != "" {
			size, _ = strconv.ParseFloat(m[3], 64)
		}
		w := float64(len([]rune(unescapeXML(m[4])))) * plot.CharWidth * size
		if m[2] == "" || m[2] == "start" {
			require.LessOrEqual(t, x+w, 860.0+1, "text %q at x %.0f, %.1fpx runs past the edge", m[4], x, size)
		}
	}
	// A step that failed on errors is marked as a failure, apart from a
	// saturated one.
	require.Equal(t, 1, strings.Count(svg, `class="failed"`))
	require.Equal(t, 1, strings.Count(svg, `class="saturated"`))
	require.Contains(t, svg, "failed (over 1% errors)")
}

func unescapeXML(s string) string {
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&", "&#34;", `"`, "&#39;", "'").Replace(s)
}

// Issue 36 item 5: no all-zero tables, and a blackhole's set-up said in the
// promise line.
func TestNoAllZeroTablesAndBlackholePromise(t *testing.T) {
	s := &report.StrategyResult{Name: "mux", Ops: 10, AcquireRelease: report.Latency{Count: 10, P50Us: 100}, Acquire: report.Latency{Count: 10}, Release: report.Latency{Count: 10}}
	var w bytes.Buffer
	report.WriteLatencyTables(&w, &report.Report{Strategies: []*report.StrategyResult{s}})
	out := w.String()
	require.Contains(t, out, "### Failed (latency to failure) latency (us)\n\nNone in any strategy (count 0), so no table.")
	require.Equal(t, 3, strings.Count(out, "| strategy | count |"), out)

	cfg := &Config{Strategies: []string{"seq", "mux"}, Warmup: 500 * time.Millisecond, Duration: 2 * time.Second,
		Faults: []Fault{{Kind: "blackhole", Node: 2}}}
	require.Equal(t, "500ms warm-up then 2s per strategy (about 7s in all, with 1s of connection set-up per strategy: a blackholed node never answers it)", runPlan(cfg))

	var h bytes.Buffer
	report.WriteHeadroom(&h, &report.SweepReport{Strategies: []*report.SweepStrategy{{Name: "mux", Knee: &report.SweepStep{}, KneeRate: 100}}})
	require.NotContains(t, h.String(), "| mux |", "no all-dash headroom table")
	// no knee and no -capacity-rate: no plan stated, no Provisioning
	// bounds invoked that were not computed
	require.NotContains(t, h.String(), "Planning at")
	require.NotContains(t, h.String(), "upper bounds stand")
	require.Contains(t, h.String(), "no capacity to plan at 70% of")
	h.Reset()
	report.WriteHeadroom(&h, &report.SweepReport{Config: report.ReportConfig{CapacityRate: 500}, Strategies: []*report.SweepStrategy{{Name: "mux", Knee: &report.SweepStep{}, KneeRate: 100}}})
	require.Contains(t, h.String(), "The Provisioning section's upper bounds stand.")
}
