package bench

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redmux/redmux/bench/internal/format"
	"github.com/redmux/redmux/bench/internal/report"
	"github.com/redmux/redmux/bench/internal/stats"
)

// defaultCompareNoise is the smallest change compare flags: below it, a
// change is within a shared machine's run-to-run noise even when repeated
// runs happened to agree.
const defaultCompareNoise = 0.05

// defaultCompareAlpha is the significance level of compare's test, as
// benchstat's.
const defaultCompareAlpha = 0.05

// compareConfig is the command line of redmux-bench compare.
type compareConfig struct {
	Old, New []string // result files: runs of the same command, before and after
	Noise    float64  // -noise: the smallest relative change flagged
	// Alpha is -alpha: a change is significant when its p-value is below.
	Alpha float64
	// Test is -test: "utest" (Mann-Whitney U, benchstat's default: no
	// assumption on the distribution) or "ttest" (Welch's t-test: assumes
	// normal samples, and reaches significance with fewer runs).
	Test string
}

// parseCompareArgs parses "redmux-bench compare [-noise 5%] OLD NEW", where
// OLD and NEW are each one result file (summary.json or sweep.json) or a
// comma-separated list of repeated runs.
func parseCompareArgs(args []string) (*compareConfig, error) {
	c := &compareConfig{Noise: defaultCompareNoise, Alpha: defaultCompareAlpha, Test: "utest"}
	fs := flag.NewFlagSet("redmux-bench compare", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Var(noiseFlag{&c.Noise}, "noise", "smallest relative `CHANGE` flagged, e.g. 5% or 0.05")
	fs.Float64Var(&c.Alpha, "alpha", defaultCompareAlpha, "significance level of the test")
	fs.StringVar(&c.Test, "test", "utest", "utest (Mann-Whitney U, benchstat's default) or ttest (Welch's t-test)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, &usageError{Msg: err.Error()}
	}
	if c.Test != "utest" && c.Test != "ttest" {
		return nil, usagef("-test %q: want utest or ttest", c.Test)
	}
	if !(c.Alpha > 0 && c.Alpha < 1) {
		return nil, usagef("-alpha %g: want a level between 0 and 1, e.g. 0.05", c.Alpha)
	}
	if fs.NArg() != 2 {
		return nil, usagef("compare needs two arguments, OLD and NEW, each a result file or a comma-separated list of repeated runs (redmux-bench compare [-noise 5%%] a.json b.json)")
	}
	for _, f := range fs.Args() {
		if strings.HasPrefix(f, "-") {
			return nil, usagef("flags go before the files, got %q", f)
		}
	}
	split := func(s string) []string {
		var out []string
		for _, f := range strings.Split(s, ",") {
			if f = strings.TrimSpace(f); f != "" {
				out = append(out, f)
			}
		}
		return out
	}
	c.Old, c.New = split(fs.Arg(0)), split(fs.Arg(1))
	if len(c.Old) == 0 || len(c.New) == 0 {
		return nil, usagef("compare: OLD and NEW each need at least one file")
	}
	return c, nil
}

// compareUsage writes compare's help.
func compareUsage(w io.Writer) {
	fmt.Fprint(w, `redmux-bench compare: per-metric ratios between two results, with benchstat's
significance test (golang.org/x/perf/benchmath), flagging significant changes.

Usage:
  redmux-bench compare [-noise 5%] [-alpha 0.05] [-test utest|ttest] OLD NEW

OLD and NEW are each a result file, or a comma-separated list of repeated
runs of the same command: summary.json (a run's -out or -json) or sweep.json
(a sweep's). With at least two runs a side, each metric's runs are tested
as benchstat does (Mann-Whitney U test by default, p-value printed): a
change is flagged when p < -alpha and it is larger than -noise; otherwise
"~" (no significant change). The U test needs 4 runs a side to reach
p < 0.05; -test ttest (Welch's t-test, assumes normal samples) needs fewer.
With one run on a side there is no test and no verdict: each such row
says "n=1: no significance", and the headline and the summary list the
differences larger than -noise (a reason to repeat the runs, not a
verdict: one run says nothing about its own spread). A strategy without
a figure on a side (not run, or a sweep's strategy with no step that held)
is listed with "none" there.

A loud WARNING line, first and last, is printed when the runs' settings
differ (-c, workload, nodes, strategies, rate, duration, ...) or the
sweeps were judged by different objectives (-slo): their figures are not
comparable.

Flags:
  -noise CHANGE   smallest relative change flagged (default 5%)
  -alpha LEVEL    significance level (default 0.05)
  -test NAME      utest (default) or ttest
`)
}

// compareMetric is one metric of one strategy.
type compareMetric struct {
	name   string
	higher bool // higher is better
	// floor is an absolute difference always taken as noise (a fraction
	// of an allocation per operation, a few failures in a thousand).
	floor float64
}

var (
	runMetrics = []compareMetric{
		{"ops/s", true, 0}, {"p50", false, 0}, {"p99", false, 0}, {"p99.9", false, 0},
		{"client CPU us/op", false, 0}, {"allocs/op", false, 0.5}, {"failed share", false, 0.001},
	}
	sweepMetrics = []compareMetric{
		{"capacity ops/s", true, 0}, {"p99 at the knee", false, 0}, {"client CPU us/op at the knee", false, 0},
		{"server CPU us/op/node at the knee", false, 0},
	}
)

// resultFile is one decoded result: per strategy, the metric values.
type resultFile struct {
	path   string
	sweep  bool
	config report.ReportConfig
	slo    string                        // a sweep's objective(s)
	values map[string]map[string]float64 // strategy -> metric -> value (absent: unknown)
	order  []string
}

func loadResult(path string) (*resultFile, error) {
	f, err := report.Read(path)
	var fe *report.FormatError
	switch {
	case errors.As(err, &fe) || err == nil && f.Kind != report.KindRun && f.Kind != report.KindSweep:
		return nil, fmt.Errorf("%s: not a redmux-bench summary.json or sweep.json (no strategies)", path)
	case err != nil:
		return nil, err
	}
	r := &resultFile{path: path, values: map[string]map[string]float64{}}
	r.sweep = f.Kind == report.KindSweep
	if r.sweep {
		rep, err := f.Sweep()
		if err != nil {
			return nil, err
		}
		r.config = rep.Config
		slos := map[string]bool{}
		for _, ss := range rep.Strategies {
			// The objective by its figures: "p99<5ms (default)" and
			// -slo 'p99<5ms' are one bar.
			slo := ss.SLO
			if ss.SLOPct > 0 && ss.SLOBudgetUs > 0 {
				slo = report.SLO{P: ss.SLOPct, Max: time.Duration(math.Round(ss.SLOBudgetUs * 1e3))}.String()
			}
			if !slos[slo] {
				slos[slo] = true
				r.slo += slo + "; "
			}
			v := map[string]float64{}
			if ss.Knee != nil {
				v["capacity ops/s"] = ss.KneeRate
				v["p99 at the knee"] = ss.Knee.Latency.P99Us
				v["client CPU us/op at the knee"] = ss.Knee.ClientCPUUsPerOp
				if ss.Knee.ServerCPUUsPerOpPerNode > 0 {
					v["server CPU us/op/node at the knee"] = ss.Knee.ServerCPUUsPerOpPerNode
				}
			}
			r.values[ss.Name] = v
			r.order = append(r.order, ss.Name)
		}
		return r, nil
	}
	rep, err := f.Run()
	if err != nil {
		return nil, err
	}
	r.config = rep.Config
	for _, s := range rep.Strategies {
		l := s.AcquireRelease
		if l.Count == 0 {
			l = s.Acquire
		}
		v := map[string]float64{"ops/s": s.OpsPerSec, "p50": l.P50Us, "p99": l.P99Us, "p99.9": l.P999Us,
			"allocs/op": s.AllocsPerOp, "failed share": s.FailedShare()}
		if s.CPUUsPerOp > 0 {
			v["client CPU us/op"] = s.CPUUsPerOp
		}
		r.values[s.Name] = v
		r.order = append(r.order, s.Name)
	}
	return r, nil
}

// comparisonRow is one strategy's metric, old against new.
type comparisonRow struct {
	Strategy string
	Metric   string
	stats.Result
	// OldNone and NewNone: the side has no value (the strategy was not
	// run there, or a sweep's strategy had no capacity: no step held).
	OldNone, NewNone bool
}

// comparisonResult is compare's outcome.
type comparisonResult struct {
	Rows  []comparisonRow
	Sweep bool
	// Warnings say what makes the figures less comparable (settings that
	// differ, sweeps judged by different objectives).
	Warnings []string
	// Settings lists the settings that differ between the runs
	// ("-c: 16 (old) vs 64 (new)"); non-empty makes a loud warning.
	Settings []string
}

// runCompare computes the rows of compare.
func runCompare(c *compareConfig) (*comparisonResult, error) {
	load := func(paths []string) ([]*resultFile, error) {
		var out []*resultFile
		for _, p := range paths {
			r, err := loadResult(p)
			if err != nil {
				return nil, err
			}
			if len(out) > 0 && r.sweep != out[0].sweep {
				return nil, fmt.Errorf("%s: a sweep.json and a summary.json cannot be compared", p)
			}
			out = append(out, r)
		}
		return out, nil
	}
	olds, err := load(c.Old)
	if err != nil {
		return nil, err
	}
	news, err := load(c.New)
	if err != nil {
		return nil, err
	}
	if olds[0].sweep != news[0].sweep {
		return nil, errors.New("a sweep.json and a summary.json cannot be compared")
	}
	metrics := runMetrics
	if olds[0].sweep {
		metrics = sweepMetrics
	}
	var rows []comparisonRow
	for _, strat := range strategiesOf(olds, news) {
		// A strategy without its headline figure on a side (not run, or a
		// sweep's strategy with no step that held: no capacity) is listed
		// as such, never dropped.
		ov, nv := collect(olds, strat, metrics[0].name), collect(news, strat, metrics[0].name)
		if len(ov) == 0 || len(nv) == 0 {
			rows = append(rows, noneRow(strat, metrics[0].name, ov, nv))
			continue
		}
		for _, m := range metrics {
			ov, nv := collect(olds, strat, m.name), collect(news, strat, m.name)
			if len(ov) == 0 || len(nv) == 0 {
				continue
			}
			rows = append(rows, compareRow(c, strat, m, ov, nv))
		}
	}
	if len(rows) == 0 {
		return nil, errors.New("no strategy in OLD or NEW")
	}
	cmp := &comparisonResult{Rows: rows, Sweep: olds[0].sweep}
	cmp.Settings = settingsDiffer(olds, news)
	if cmp.Sweep {
		seen := map[string]bool{}
		for _, r := range append(olds, news...) {
			seen[strings.TrimSuffix(r.slo, "; ")] = true
		}
		if len(seen) > 1 {
			var list []string
			for k := range seen {
				list = append(list, k)
			}
			sort.Strings(list)
			cmp.Warnings = append(cmp.Warnings, "the sweeps were judged by different objectives ("+strings.Join(list, " | ")+"), so their capacities are not comparable: run both with the same -slo (or -slo-from the other's sweep.json)")
		}
	}
	return cmp, nil
}

// compareRow compares one metric's runs (bench/internal/stats decides):
// with at least two runs a side by benchstat's test, a change flagged when
// p < -alpha and larger than -noise; with one run on a side by -noise alone.
func compareRow(c *compareConfig, strat string, m compareMetric, ov, nv []float64) comparisonRow {
	o := stats.Options{Noise: c.Noise, Alpha: c.Alpha, Test: c.Test, HigherBetter: m.higher, Floor: m.floor}
	return comparisonRow{Strategy: strat, Metric: m.name, Result: stats.Compare(ov, nv, o)}
}

// strategiesOf lists every strategy of any run, old or new, in the order
// the runs name them.
func strategiesOf(olds, news []*resultFile) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range append(append([]*resultFile(nil), olds...), news...) {
		for _, s := range r.order {
			if !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	return out
}

// noneRow is a strategy's headline metric that a side does not have: the
// side's value is printed "none" and there is no verdict.
func noneRow(strat, metric string, ov, nv []float64) comparisonRow {
	r := comparisonRow{Strategy: strat, Metric: metric, OldNone: len(ov) == 0, NewNone: len(nv) == 0}
	r.P, r.OldCV, r.NewCV, r.Ratio = -1, -1, -1, math.NaN()
	if !r.OldNone {
		r.Old = ov[0]
	}
	if !r.NewNone {
		r.New = nv[0]
	}
	switch {
	case r.OldNone && r.NewNone:
		r.Verdict = "none on either side"
	case r.OldNone:
		r.Verdict = "none on the old side"
	default:
		r.Verdict = "none on the new side"
	}
	return r
}

// setting is one configuration value compare checks across runs.
type setting struct{ name, value string }

// settingsOf lists the settings that make two runs comparable: what was
// run (strategies, workload, keys, -c, rate, duration) against what (nodes,
// TLS, faults, latency, caps). Addresses count only for nodes given with
// -nodes (an embedded cluster's ports change every run).
func settingsOf(c report.ReportConfig) []setting {
	g := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	nodes := fmt.Sprintf("%d %s", len(c.Nodes), c.TargetKind)
	if c.TargetKind == "nodes" {
		nodes += " (" + strings.Join(c.Nodes, ",") + ")"
	}
	return []setting{
		{"nodes", nodes}, {"-strategy", strings.Join(c.Strategies, ",")}, {"-c", strconv.Itoa(c.Workers)},
		{"-workload", c.Workload}, {"-keys", strconv.Itoa(c.Keys)}, {"-keys-dist", c.KeysDist}, {"-hold", c.Hold},
		{"loop", c.Loop}, {"-rate", g(c.Rate)}, {"-d (or -step)", g(c.DurationS)}, {"-n", strconv.FormatInt(c.Ops, 10)},
		{"-warmup", g(c.WarmupS)}, {"-ttl", strconv.FormatInt(c.TTLMs, 10) + "ms"}, {"-timeout", g(c.TimeoutMs) + "ms"},
		{"-tls", strconv.FormatBool(c.TLS)}, {"-conns", strconv.Itoa(c.MuxConns)}, {"-transport", c.MuxTransport},
		{"-direct-wait", g(c.DirectWaitMs) + "ms"}, {"-latency", g(c.LatencyMs) + "ms"}, {"-fault", strings.Join(c.Faults, " ")},
		{"-node-cap", g(c.NodeCap)}, {"-db", strconv.Itoa(c.DB)},
	}
}

// settingsDiffer lists the settings that differ between the first OLD run
// and every other run, old or new.
func settingsDiffer(olds, news []*resultFile) []string {
	ref := olds[0]
	base := settingsOf(ref.config)
	var out []string
	seen := map[string]bool{}
	for _, r := range append(append([]*resultFile(nil), olds[1:]...), news...) {
		for i, st := range settingsOf(r.config) {
			if st.value == base[i].value || seen[st.name+"\x00"+st.value] {
				continue
			}
			seen[st.name+"\x00"+st.value] = true
			show := func(v string) string {
				if v == "" {
					return "unset"
				}
				return v
			}
			out = append(out, fmt.Sprintf("%s: %s (%s) vs %s (%s)", st.name, show(base[i].value), ref.path, show(st.value), r.path))
		}
	}
	return out
}

func collect(rs []*resultFile, strat, metric string) []float64 {
	var out []float64
	for _, r := range rs {
		if v, ok := r.values[strat][metric]; ok {
			out = append(out, v)
		}
	}
	return out
}

// writeCompare prints the comparison table, with a loud warning first
// (and again last) when the runs' settings differ or the sweeps were
// judged by different objectives. Rows with one run on a side carry no
// verdict ("n=1: no significance"), said in the headline and the summary.
func writeCompare(w io.Writer, c *compareConfig, cmp *comparisonResult) {
	rows := cmp.Rows
	loud := func() {
		if len(cmp.Settings) > 0 {
			fmt.Fprintf(w, "WARNING: the runs compared ran different settings, so their figures are not comparable: %s\n", strings.Join(cmp.Settings, "; "))
		}
		for _, m := range cmp.Warnings {
			fmt.Fprintln(w, "WARNING:", m)
		}
	}
	loud()
	fmt.Fprintf(w, "old: %s (%d run(s)); new: %s (%d run(s))\n", strings.Join(c.Old, ","), len(c.Old), strings.Join(c.New, ","), len(c.New))
	untestedLine := untestedSummary(c, rows)
	if untestedLine != "" {
		fmt.Fprintln(w, untestedLine)
	}
	t := report.NewTable("strategy", "metric", "old", "±", "new", "±", "new/old", "p", "verdict")
	flagged, tested := 0, 0
	notes := map[string]bool{}
	for _, r := range rows {
		if r.P >= 0 {
			tested++
			if r.Verdict != "~" {
				flagged++
			}
		}
		if r.PNote != "" {
			notes[r.PNote] = true
		}
		t.Row(compareCells(r)...)
	}
	t.Write(w)
	if tested > 0 {
		test := "Mann-Whitney U test, as benchstat; centres are medians"
		if c.Test == "ttest" {
			test = "Welch's t-test; centres are means"
		}
		fmt.Fprintf(w, "%d of %d tested changes significant (p < %g, %s, and larger than -noise %.0f%%; \"~\": no significant change).\n", flagged, tested, c.Alpha, test, 100*c.Noise)
	}
	if untestedLine != "" {
		fmt.Fprintln(w, untestedLine)
	}
	var ns []string
	for n := range notes {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	for _, n := range ns {
		fmt.Fprintf(w, "note: %s (runs a side)\n", n)
	}
	loud()
}

// compareCells is one row of compare's table.
func compareCells(r comparisonRow) []string {
	cv := func(v float64) string {
		if v < 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f%%", 100*v)
	}
	val := func(none bool, v float64) string {
		switch {
		case none:
			return "none"
		case strings.HasPrefix(r.Metric, "p"):
			return format.Us(v)
		case r.Metric == "failed share":
			return fmt.Sprintf("%.2f%%", 100*v)
		case strings.Contains(r.Metric, "ops/s"):
			return format.Count(v)
		}
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	ratio := "inf"
	switch {
	case math.IsNaN(r.Ratio):
		ratio = "-"
	case !math.IsInf(r.Ratio, 0):
		ratio = fmt.Sprintf("%.2fx", r.Ratio)
	}
	p := "-"
	if r.P >= 0 {
		p = fmt.Sprintf("p=%.3f", r.P)
	}
	verdict := r.Verdict
	if r.BeyondNoise {
		verdict += " (beyond -noise)"
	}
	return []string{r.Strategy, r.Metric, val(r.OldNone, r.Old), cv(r.OldCV), val(r.NewNone, r.New), cv(r.NewCV), ratio, p, verdict}
}

// untestedSummary is the line that says rows with one run on a side were
// not tested, and which of their differences exceed -noise (a reason to
// repeat the runs, not a verdict); "" when both sides have repeated runs
// and every row was tested or has no value on a side.
func untestedSummary(c *compareConfig, rows []comparisonRow) string {
	n := 0
	var beyond []string
	for _, r := range rows {
		if r.Verdict != stats.NoTest {
			continue
		}
		n++
		if r.BeyondNoise {
			ratio := "from 0"
			if !math.IsInf(r.Ratio, 0) {
				ratio = fmt.Sprintf("%.2fx", r.Ratio)
			}
			beyond = append(beyond, r.Strategy+" "+r.Metric+" "+ratio)
		}
	}
	if n == 0 && len(c.Old) > 1 && len(c.New) > 1 {
		return ""
	}
	list := "none"
	if len(beyond) > 0 {
		list = strings.Join(beyond, ", ")
	}
	why := fmt.Sprintf("%d row(s) with one value on a side", n)
	switch {
	case len(c.Old) == 1 && len(c.New) == 1:
		why = "one run a side"
	case len(c.Old) == 1:
		why = "one run on the old side"
	case len(c.New) == 1:
		why = "one run on the new side"
	}
	return fmt.Sprintf("n=1: no significance: %s, so no p-value exists and no verdict is given; "+
		"differences beyond -noise %.0f%% (a reason to repeat the runs, not a verdict): %s. Repeat each command (4 runs a side for the U test) and pass the runs comma-separated.", why, 100*c.Noise, list)
}

func compareMain(args []string, stdout, stderr io.Writer) int {
	c, err := parseCompareArgs(args)
	if errors.Is(err, flag.ErrHelp) {
		compareUsage(stdout)
		return ExitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "redmux-bench: compare: %v (see redmux-bench compare -h)\n", err)
		return ExitUsage
	}
	cmp, err := runCompare(c)
	if err != nil {
		fmt.Fprintf(stderr, "redmux-bench: compare: %s\n", oneLine(err.Error()))
		return ExitFailure
	}
	writeCompare(stdout, c, cmp)
	return ExitOK
}
