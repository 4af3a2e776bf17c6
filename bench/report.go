package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/redmux/redmux/bench/internal/format"
	"github.com/redmux/redmux/bench/internal/report"
	"github.com/redmux/redmux/bench/load"
	"github.com/redmux/redmux/mux"
)

// Files written in the -out directory.
const (
	fileReport      = "report.md"
	fileSummary     = "summary.json"
	fileCSV         = "summary.csv"
	fileHlog        = "bench.hlog"
	filePlot        = "percentiles.svg"
	filePlotAcquire = "percentiles-acquire.svg"
)

// table is a minimal aligned text table.
type table struct {
	head []string
	rows [][]string
}

func newTable(head ...string) *table { return &table{head: head} }
func (t *table) row(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) write(w io.Writer) {
	width := make([]int, len(t.head))
	for i, h := range t.head {
		width[i] = len(h)
	}
	for _, r := range t.rows {
		for i, c := range r {
			width[i] = max(width[i], len(c))
		}
	}
	line := func(cells []string) {
		var b strings.Builder
		for i, c := range cells {
			if i == 0 {
				fmt.Fprintf(&b, "%-*s", width[i], c)
			} else {
				fmt.Fprintf(&b, "  %*s", width[i], c)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	line(t.head)
	for _, r := range t.rows {
		line(r)
	}
}

// markdown writes t as a GitHub Markdown table (first column left, the
// others right aligned).
func (t *table) markdown(w io.Writer) {
	fmt.Fprintf(w, "| %s |\n|", strings.Join(t.head, " | "))
	for i := range t.head {
		if i == 0 {
			fmt.Fprint(w, " --- |")
		} else {
			fmt.Fprint(w, " ---: |")
		}
	}
	fmt.Fprintln(w)
	for _, r := range t.rows {
		fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
	}
}

func f1(v float64) string { return fmt.Sprintf("%.1f", v) }

func errString(m map[string]int64) string {
	if len(m) == 0 {
		return "0"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return strings.Join(parts, " ")
}

// metricTitle is a metric's heading in reports.
var metricTitle = map[string]string{
	load.MetricAcquire: "Acquire", load.MetricRelease: "Release", load.MetricAcquireRelease: "Acquire+release",
	load.MetricNotAcquired: "Not acquired (held elsewhere)", load.MetricFailed: "Failed (latency to failure)",
}

// tablePercentiles are the headline table's percentiles: acquire's and
// acquire+release's (followed by max).
func tablePercentiles(c report.ReportConfig) (acq, acqRel []float64) {
	if len(c.Percentiles) > 0 {
		return c.Percentiles, c.Percentiles
	}
	return []float64{50, 99, 99.9}, []float64{50, 99}
}

// reportPercentiles are the percentiles of the per-metric tables and CSV.
func reportPercentiles(c report.ReportConfig) []float64 {
	if len(c.Percentiles) > 0 {
		return c.Percentiles
	}
	return defaultPercentiles
}

func pctCell(l report.Latency, p float64) string {
	if l.Count == 0 {
		return "-"
	}
	v, _ := l.At(p)
	return format.Us(v)
}

// summaryTable is the headline table: throughput, acquire and
// acquire+release latency, outcomes (failed operations with their own
// latency), errors by kind, node errors by kind and client cost.
func summaryTable(rep *report.Report) *table { return runColumns(rep.Config).table(rep.Strategies) }

// runColumns are the headline table's columns, one row per strategy.
func runColumns(c report.ReportConfig) columns[*report.StrategyResult] {
	acq, acqRel := tablePercentiles(c)
	cs := columns[*report.StrategyResult]{
		{head: "strategy", json: "name", cell: func(s *report.StrategyResult) string {
			name := s.Name
			if s.Saturated {
				name += " (saturated)"
			}
			if s.Interrupted {
				name += " (interrupted)"
			}
			return name
		}},
		{head: "ops/s", json: "ops_per_sec", cell: func(s *report.StrategyResult) string { return format.Count(s.OpsPerSec) }},
	}
	if c.Rate > 0 {
		cs = append(cs, column[*report.StrategyResult]{head: "target/s", json: "target_rate", cell: func(s *report.StrategyResult) string { return format.Count(s.TargetRate) }})
	}
	if contention(c) {
		cs = append(cs, column[*report.StrategyResult]{head: "acquired/s", json: "acquired_per_sec", cell: func(s *report.StrategyResult) string { return format.Count(s.AcquiredPerSec) }})
	}
	for _, p := range acq {
		cs = append(cs, column[*report.StrategyResult]{head: "acq " + format.Percentile(p), json: "acquire", cell: func(s *report.StrategyResult) string { return pctCell(s.Acquire, p) }})
	}
	for _, p := range acqRel {
		cs = append(cs, column[*report.StrategyResult]{head: "acq+rel " + format.Percentile(p), json: "acquire_release", cell: func(s *report.StrategyResult) string { return pctCell(s.AcquireRelease, p) }})
	}
	return append(cs, columns[*report.StrategyResult]{
		{head: "acq+rel max", json: "acquire_release.max_us", cell: func(s *report.StrategyResult) string {
			if s.AcquireRelease.Count == 0 {
				return "-"
			}
			return format.Us(s.AcquireRelease.MaxUs)
		}},
		{head: "acq+rel ok", json: "acquired_released", cell: func(s *report.StrategyResult) string { return fmtInt(s.Acquired - s.ReleaseFailed) }},
		{head: "not acq", json: "not_acquired", cell: func(s *report.StrategyResult) string { return fmtInt(s.NotAcquired) }},
		{head: "failed", json: "failed", cell: func(s *report.StrategyResult) string { return fmtInt(s.Failed) }},
		{head: "fail p99", json: "failed_latency.p99_us", cell: func(s *report.StrategyResult) string { return pctCell(s.FailedLat, 99) }},
		{head: "errors", json: "errors", cell: func(s *report.StrategyResult) string { return errString(s.Errors) }},
		{head: "node errors", json: "node_errors", cell: func(s *report.StrategyResult) string { return errString(s.NodeErrors) }},
		{head: "allocs/op", json: "allocs_per_op", cell: func(s *report.StrategyResult) string { return fmt.Sprintf("%.1f", s.AllocsPerOp) }},
		{head: "cpu us/op", json: "cpu_us_per_op", cell: func(s *report.StrategyResult) string { return fmt.Sprintf("%.1f", s.CPUUsPerOp) }},
	}...)
}

// warnings are the lines that must be read with the table: saturated
// open-loop runs, failing runs, an interrupted run.
func warnings(rep *report.Report) []string {
	var out []string
	if rep.Interrupted {
		out = append(out, "interrupted: the report covers what was measured before the stop")
	}
	for _, s := range rep.Strategies {
		if s.Saturated {
			out = append(out, fmt.Sprintf("%s saturated: %s; latencies include queueing, capacity figures are not computed (lower -rate or run redmux-bench sweep)", s.Name, s.Saturation))
		}
		if s.StartLateMs > 100 {
			out = append(out, fmt.Sprintf("%s started %s after its -start-at slot (set-up overran it): its window is not aligned with other machines'", s.Name, format.Us(s.StartLateMs*1e3)))
		}
		if s.Failed > 0 && s.FailedShare() > 0.5 {
			out = append(out, fmt.Sprintf("%s: %d of %d operations failed (%s); node errors: %s", s.Name, s.Failed, s.Ops, errString(s.Errors), errString(s.NodeErrors)))
		}
		out = append(out, outageLines(s.Name, s.NodeOutages)...)
	}
	return out
}

// WriteTable prints the headline table for a terminal.
func WriteTable(w io.Writer, rep *report.Report) {
	fmt.Fprintln(w, runDescription(rep.Config))
	summaryTable(rep).write(w)
	for _, l := range warnings(rep) {
		fmt.Fprintln(w, "warning: "+l)
	}
}

// runDescription is what a run measures, in one line: target, strategies,
// workers, loop, workload and keys. Run prints it first and the table
// under it.
func runDescription(c report.ReportConfig) string {
	loop := c.Loop + " loop"
	if c.Rate > 0 {
		loop += fmt.Sprintf(" at %s ops/s", format.Count(c.Rate))
	}
	s := fmt.Sprintf("%s; %s, %d workers, %s, workload %s, keys %d%s", c.Target, strings.Join(c.Strategies, "/"), c.Workers, loop, c.Workload, c.Keys, workloadExtra(c))
	if c.Segment != nil {
		s += "; " + describeSegment(c.Segment, c.Rate, c.Workers, c.Keys)
	}
	return s
}

// blackholeSetup is what a blackholed node adds to a strategy's set-up: the
// dial and set-up timeout its connections wait out (DialTimeout in run.go).
const blackholeSetup = time.Second

// runPlan says how long each strategy runs and about how long the whole
// run takes.
func runPlan(cfg *Config) string {
	n := len(cfg.Strategies)
	if cfg.Ops > 0 {
		return fmt.Sprintf("%s warm-up then %d operations per strategy", cfg.Warmup, cfg.Ops)
	}
	total := time.Duration(n) * (cfg.Warmup + cfg.Duration)
	setup := ""
	for _, f := range cfg.Faults {
		if f.Kind == "blackhole" {
			// Workers are set up together: one set-up timeout per strategy
			// (seq and fanout: per connection to the blackholed node).
			total += time.Duration(n) * blackholeSetup
			setup = fmt.Sprintf(", with %s of connection set-up per strategy: a blackholed node never answers it", blackholeSetup)
		}
	}
	return fmt.Sprintf("%s warm-up then %s per strategy (about %s in all%s)", cfg.Warmup, cfg.Duration, total.Round(time.Second/10), setup)
}

// contention reports whether the run's workers contend for keys (or hold
// them), so that hand-offs per second are worth a column and a section.
func contention(c report.ReportConfig) bool {
	return c.Workload == load.WorkloadContended || (c.KeysDist != "" && c.KeysDist != load.KeysRoundRobin) || c.Hold != "" || c.Keys < c.Workers
}

// workloadExtra describes -keys-dist and -hold when they are set.
func workloadExtra(c report.ReportConfig) string {
	s := ""
	if c.KeysDist != "" && c.KeysDist != load.KeysRoundRobin {
		s += " (" + c.KeysDist + ")"
	}
	if c.Hold != "" {
		s += ", hold " + c.Hold
	}
	return s
}

// writeContention writes the contended report: hand-offs per second
// (acquisitions, not attempts), how many attempts each took, and how long
// a lock was held.
func writeContention(w io.Writer, rep *report.Report) {
	c := rep.Config
	if !contention(c) {
		return
	}
	fmt.Fprintln(w, "### Contention")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Workers contend for keys (keys: %d, %s popularity, %d workers%s). A hand-off is an acquisition: the lock passing to a worker; refused attempts (held elsewhere) are not hand-offs. Held is from the end of a successful acquire to the end of its release (hold, extension and release).", c.Keys, c.KeysDist, c.Workers, map[bool]string{true: ", hold " + c.Hold, false: ""}[c.Hold != ""])
	if c.Keys == 1 {
		fmt.Fprint(w, " With one key, busy is the share of time the lock was held: near 100%, the hand-off rate is bound by the time inside the lock, not by Redis.")
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w)
	head := []string{"strategy", "attempts/s", "hand-offs/s", "attempts per hand-off", "refused", "held (mean)"}
	if c.Keys == 1 {
		head = append(head, "busy")
	}
	t := newTable(head...)
	for _, s := range rep.Strategies {
		per := "-"
		if s.Acquired > 0 {
			per = fmt.Sprintf("%.1f", float64(s.Ops)/float64(s.Acquired))
		}
		refused := "-"
		if s.Ops > 0 {
			refused = fmt.Sprintf("%.1f%%", 100*float64(s.NotAcquired)/float64(s.Ops))
		}
		held := 0.0
		if s.AcquireRelease.Count > 0 {
			held = s.AcquireRelease.MeanUs - s.Acquire.MeanUs
		}
		row := []string{s.Name, format.Count(s.OpsPerSec), format.Count(s.AcquiredPerSec), per, refused, format.Us(max(held, 0))}
		if c.Keys == 1 {
			row = append(row, fmt.Sprintf("%.0f%%", math.Min(100, 100*s.AcquiredPerSec*max(held, 0)/1e6)))
		}
		t.row(row...)
	}
	t.markdown(w)
	fmt.Fprintln(w)
}

// WriteCSV writes one row per strategy and metric: outcome counts, rates
// and the chosen percentiles in microseconds.
func WriteCSV(w io.Writer, rep *report.Report) error {
	var rows []metricRow
	for _, s := range rep.Strategies {
		for _, m := range load.Metrics {
			rows = append(rows, metricRow{s, m, s.Metric(m)})
		}
	}
	return metricColumns(rep.Config).writeCSV(w, rows)
}

// metricRow is one metric of one strategy: a row of summary.csv.
type metricRow struct {
	s      *report.StrategyResult
	metric string
	l      report.Latency
}

// metricColumns are summary.csv's columns ("*": the row's metric's
// latency object in the JSON).
func metricColumns(c report.ReportConfig) columns[metricRow] {
	cs := columns[metricRow]{
		{csv: "strategy", json: "name", cell: func(r metricRow) string { return r.s.Name }},
		{csv: "metric", cell: func(r metricRow) string { return r.metric }},
		{csv: "count", json: "*.count", cell: func(r metricRow) string { return fmtInt(r.l.Count) }},
		{csv: "ops", json: "ops", cell: func(r metricRow) string { return fmtInt(r.s.Ops) }},
		{csv: "ops_per_sec", json: "ops_per_sec", cell: func(r metricRow) string { return csvFloat(r.s.OpsPerSec) }},
		{csv: "target_rate", json: "target_rate", cell: func(r metricRow) string { return csvFloat(r.s.TargetRate) }},
		{csv: "saturated", json: "saturated", cell: func(r metricRow) string { return fmtBool(r.s.Saturated) }},
		{csv: "interrupted", json: "interrupted", cell: func(r metricRow) string { return fmtBool(r.s.Interrupted) }},
		{csv: "failed", json: "failed", cell: func(r metricRow) string { return fmtInt(r.s.Failed) }},
		{csv: "min_us", json: "*.min_us", cell: func(r metricRow) string { return csvFloat(r.l.MinUs) }},
		{csv: "mean_us", json: "*.mean_us", cell: func(r metricRow) string { return csvFloat(r.l.MeanUs) }},
	}
	for _, p := range reportPercentiles(c) {
		cs = append(cs, column[metricRow]{csv: format.Percentile(p) + "_us", json: "*", cell: func(r metricRow) string { v, _ := r.l.At(p); return csvFloat(v) }})
	}
	return append(cs, column[metricRow]{csv: "max_us", json: "*.max_us", cell: func(r metricRow) string { return csvFloat(r.l.MaxUs) }})
}

// WriteJSON writes the -json object.
func WriteJSON(w io.Writer, rep *report.Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// WriteMarkdown writes report.md.
func WriteMarkdown(w io.Writer, rep *report.Report) error {
	c, e := rep.Config, rep.Env
	title := c.Title
	if title == "" {
		title = "redmux-bench report"
	}
	fmt.Fprintf(w, "# %s\n\n", title)
	for _, l := range warnings(rep) {
		fmt.Fprintf(w, "> **Warning:** %s.\n>\n", l)
	}
	if len(warnings(rep)) > 0 {
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "Target: %s. %s loop, workload `%s`, %d workers, %d keys%s.\n\n", c.Target, strings.ToUpper(c.Loop[:1])+c.Loop[1:], c.Workload, c.Workers, c.Keys, workloadExtra(c))
	fmt.Fprintf(w, "Reproduce:\n\n    %s\n\n", c.Command)
	fmt.Fprintln(w, "## Results")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Latency per operation (us/ms), throughput over the measured window, client cost per operation (an operation = one acquire attempt, plus its release when acquired). Acquire latencies are those of acquisitions that took the lock; refused attempts (held elsewhere) and failed operations have their own distributions below, so no operation and none of the time lost in timeouts is left out. Percentiles use HdrHistogram's ceiling rank, as HistogramLogProcessor computes them.")
	fmt.Fprintln(w)
	summaryTable(rep).markdown(w)
	fmt.Fprintln(w)
	fmt.Fprintf(w, "![acquire+release latency by percentile](%s)\n\n", filePlot)

	writeLatencyTables(w, rep)

	writeOutcomes(w, rep)

	writeContention(w, rep)
	writeServerSection(w, rep)
	writeCapacity(w, rep)

	writeConfigSection(w, c)
	writeEnvSection(w, e)
	fmt.Fprintf(w, "Files: [%s](%s) (the -json object), [%s](%s) (one row per strategy and metric), [%s](%s) (HdrHistogram interval log, ns, tags `<strategy>.<metric>`; merge logs of several machines with `redmux-bench merge`), [%s](%s), [%s](%s).\n",
		fileSummary, fileSummary, fileCSV, fileCSV, fileHlog, fileHlog, filePlot, filePlot, filePlotAcquire, filePlotAcquire)
	return nil
}

// writeLatencyTables writes one table per metric, with the run's
// percentiles.
func writeLatencyTables(w io.Writer, rep *report.Report) {
	c := rep.Config
	pcts := reportPercentiles(c)
	for _, m := range load.Metrics {
		fmt.Fprintf(w, "### %s latency (us)\n\n", metricTitle[m])
		var n int64
		for _, s := range rep.Strategies {
			n += s.Metric(m).Count
		}
		if n == 0 {
			// No all-zero table: say there is nothing to show.
			fmt.Fprintln(w, "None in any strategy (count 0), so no table.")
			fmt.Fprintln(w)
			continue
		}
		head := []string{"strategy", "count", "min"}
		for _, p := range pcts {
			head = append(head, format.Percentile(p))
		}
		t := newTable(append(head, "max", "mean")...)
		for _, s := range rep.Strategies {
			l := s.Metric(m)
			row := []string{s.Name, fmt.Sprint(l.Count), f1(l.MinUs)}
			for _, p := range pcts {
				v, _ := l.At(p)
				row = append(row, f1(v))
			}
			t.row(append(row, f1(l.MaxUs), f1(l.MeanUs))...)
		}
		t.markdown(w)
		fmt.Fprintln(w)
	}

}

// writeOutcomes writes the outcomes, errors and client cost per strategy.
func writeOutcomes(w io.Writer, rep *report.Report) {
	fmt.Fprintln(w, "### Outcomes and errors")
	fmt.Fprintln(w)
	t := newTable("strategy", "ops", "duration s", "acquired and released", "not acquired", "failed", "of which at release", "extended", "not extended", "op errors", "node errors", "allocs/op", "bytes/op", "cpu us/op", "harness cpu us/op")
	for _, s := range rep.Strategies {
		t.row(s.Name, fmt.Sprint(s.Ops), fmt.Sprintf("%.2f", s.DurationS), fmt.Sprint(s.Acquired-s.ReleaseFailed), fmt.Sprint(s.NotAcquired),
			fmt.Sprint(s.Failed), fmt.Sprint(s.ReleaseFailed),
			fmt.Sprint(s.Extended), fmt.Sprint(s.NotExtended), errString(s.Errors), errString(s.NodeErrors),
			fmt.Sprintf("%.1f", s.AllocsPerOp), fmt.Sprintf("%.0f", s.BytesPerOp), fmt.Sprintf("%.2f", s.CPUUsPerOp), fmt.Sprintf("%.2f", s.HarnessCPUUsPerOp))
	}
	t.markdown(w)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Every operation is in one outcome: acquired and released + not acquired + failed = ops (an operation whose release failed after it acquired is in failed, of which at release, only).")
	fmt.Fprintln(w)
	writeOutageTable(w, rep)
	fmt.Fprintln(w, "Op errors are operations that failed (no_quorum: too many nodes failed for a quorum; release_*/extend_*: the release or extension failed). Node errors count each node that failed within an operation (timeout, conn, server, protocol), including operations that still reached a quorum. Allocations and CPU are the benchmark process's (runtime.MemStats and getrusage deltas over the measured window) divided by operations; cpu us/op leaves out the load generator's own CPU, shown apart as harness cpu us/op (the interval collector's measured CPU time plus the load loop's calibrated cost per operation: clock reads and latency recording), so it is the client's cost. Allocations include the load loop's (none in steady state) but not the collector's.")
	fmt.Fprintln(w)

}

// writeOutageTable writes which node failed, how often and when, per
// strategy (nothing when no node failed).
func writeOutageTable(w io.Writer, rep *report.Report) {
	t := newTable("strategy", "node", "address", "errors", "first error", "last error")
	n := 0
	for _, s := range rep.Strategies {
		for _, o := range s.NodeOutages {
			n++
			t.row(s.Name, fmt.Sprint(o.Node), o.Addr, fmt.Sprint(o.Errors),
				fmt.Sprintf("%.2fs (%s)", o.FirstS, report.ShortTime(o.First)), fmt.Sprintf("%.2fs (%s)", o.LastS, report.ShortTime(o.Last)))
		}
	}
	if n == 0 {
		return
	}
	fmt.Fprintln(w, "Node errors by node: which node failed within operations, how many times, and when (seconds into the strategy's measured window, and UTC):")
	fmt.Fprintln(w)
	t.markdown(w)
	fmt.Fprintln(w)
}

// writeConfigSection writes the run's configuration.
func writeConfigSection(w io.Writer, c report.ReportConfig) {
	fmt.Fprintln(w, "## Configuration")
	fmt.Fprintln(w)
	ct := newTable("setting", "value")
	ct.row("nodes", fmt.Sprintf("%d (%s)", len(c.Nodes), strings.Join(c.Nodes, ", ")))
	ct.row("strategies", strings.Join(c.Strategies, ", "))
	ct.row("workers (-c)", fmt.Sprint(c.Workers))
	if c.MuxConns > 0 {
		ct.row("mux connections per node (-conns)", fmt.Sprint(c.MuxConns))
	} else {
		ct.row("mux connections per node", fmt.Sprintf("mux default (%d)", mux.DefaultConns))
	}
	if c.MuxTransport != "" {
		ct.row("mux transport (-transport)", c.MuxTransport)
	}
	if c.DirectWaitMs > 0 {
		ct.row("mux direct wait (-direct-wait)", fmt.Sprintf("%gms", c.DirectWaitMs))
	}
	if c.Ops > 0 {
		ct.row("operations per strategy (-n)", fmt.Sprint(c.Ops))
	} else {
		ct.row("duration per strategy (-d)", fmt.Sprintf("%gs", c.DurationS))
	}
	ct.row("warm-up per strategy", fmt.Sprintf("%gs", c.WarmupS))
	ct.row("loop", c.Loop)
	if c.Rate > 0 {
		ct.row("target rate (-rate)", fmt.Sprintf("%g ops/s (latency from each operation's intended start; saturated below %.0f%% of it achieved, or with operations left unstarted)", c.Rate, saturationShare*100))
	}
	if c.Segment != nil {
		ct.row("segment (-segment)", describeSegment(c.Segment, c.Rate, c.Workers, c.Keys)+" (workers, rate and keys in this report are this segment's; redmux-bench merge adds the segments' interval logs up)")
	}
	ct.row("workload", c.Workload)
	ct.row("keys", fmt.Sprint(c.Keys))
	ct.row("key popularity (-keys-dist)", c.KeysDist)
	if c.Hold != "" {
		ct.row("hold inside the lock (-hold)", fmt.Sprintf("%s (mean %gms; part of acquire+release latency)", c.Hold, c.HoldMeanMs))
	}
	ct.row("ttl", fmt.Sprintf("%dms", c.TTLMs))
	ct.row("per-node timeout", fmt.Sprintf("%gms", c.TimeoutMs))
	ct.row("clock drift allowance", fmt.Sprintf("ttl*%g + %gms", c.DriftFactor, c.DriftMs))
	ct.row("password", map[bool]string{true: "set (not shown)", false: "none"}[c.PasswordSet])
	if c.LatencyMs > 0 {
		ct.row("added reply latency (-latency)", fmt.Sprintf("%gms on every node", c.LatencyMs))
	}
	if len(c.Faults) > 0 {
		ct.row("faults (-fault)", strings.Join(c.Faults, ", "))
	}
	ct.markdown(w)
	fmt.Fprintln(w)
}

// writeEnvSection writes the machine and build.
func writeEnvSection(w io.Writer, e report.Env) {
	fmt.Fprintln(w, "## Environment")
	fmt.Fprintln(w)
	et := newTable("", "")
	et.row("time (UTC)", e.Time)
	et.row("go", e.GoVersion+" "+e.OS+"/"+e.Arch)
	et.row("cpu", fmt.Sprintf("%s; %d logical CPUs, GOMAXPROCS %d", e.CPU, e.NumCPU, e.GOMAXPROCS))
	if e.Build.RevisionSource != "" {
		et.row("module version", e.Build.Module)
		et.row("revision", describeBuild(e.Build))
	} else if e.Revision != "" {
		et.row("revision", e.Revision)
	}
	et.row("server", e.Server)
	et.row("server CPU measured with", e.ServerCPU)
	if e.LoadAvgStart != "" {
		et.row("load average (1 min) at start, end", e.LoadAvgStart+", "+e.LoadAvgEnd)
	}
	et.markdown(w)
	fmt.Fprintln(w)
}

// usecCell shows "n/a" when a server counts calls but not their time (the
// fake server reports usec=0).
func usecCell(v float64, calls int64) string {
	if v == 0 && calls > 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", v)
}

func writeServerSection(w io.Writer, rep *report.Report) {
	any := false
	for _, s := range rep.Strategies {
		any = any || s.Server != nil
	}
	if !any {
		return
	}
	fmt.Fprintln(w, "## Server-side cost")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "From INFO commandstats before and after each strategy's measured window, summed over the nodes (usec_per_call = execution time only: no network I/O, no parsing), and, when the server processes are known (local servers, embedded cluster in its own process), their whole CPU time per lock operation per node from /proc.")
	fmt.Fprintln(w)
	t := newTable("strategy", "SET calls", "SET usec/call", "EVALSHA calls", "EVALSHA usec/call", "server CPU us/op/node", "nodes reporting")
	var notes []string
	for _, s := range rep.Strategies {
		c := s.Server
		if c == nil {
			t.row(s.Name, "-", "-", "-", "-", "-", "0")
			continue
		}
		cpu := "-"
		if c.CPUUsPerOpPerNode > 0 {
			cpu = fmt.Sprintf("%.2f", c.CPUUsPerOpPerNode)
		}
		if c.NodesReporting == 0 {
			// Not measured, not zero (issue 48 item 4).
			t.row(s.Name, "not read", "not read", "not read", "not read", cpu, "0")
			notes = append(notes, s.Name+": "+c.NotRead+".")
			continue
		}
		t.row(s.Name, fmt.Sprint(c.SetCalls), usecCell(c.SetUsecPerCall, c.SetCalls), fmt.Sprint(c.EvalshaCalls),
			usecCell(c.EvalshaUsecPerCall, c.EvalshaCalls), cpu, fmt.Sprint(c.NodesReporting))
	}
	t.markdown(w)
	fmt.Fprintln(w)
	for _, n := range notes {
		fmt.Fprintln(w, "Not read:", n)
		fmt.Fprintln(w)
	}
}
