package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/redmux/redmux/bench/internal/format"
	"github.com/redmux/redmux/bench/load"
	"github.com/redmux/redmux/mux"
)

// Files written in the -out directory.
const (
	FileReport      = "report.md"
	FileSummary     = "summary.json"
	FileCSV         = "summary.csv"
	FileHlog        = "bench.hlog"
	FilePlot        = "percentiles.svg"
	FilePlotAcquire = "percentiles-acquire.svg"
)

// Table is a minimal aligned text table (compare writes one too).
type Table struct {
	head []string
	rows [][]string
}

// NewTable is an empty table with these headers.
func NewTable(head ...string) *Table { return &Table{head: head} }

// Row adds a row of cells.
func (t *Table) Row(cells ...string) { t.rows = append(t.rows, cells) }

// Write writes t as aligned text.
func (t *Table) Write(w io.Writer) {
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

// Markdown writes t as a GitHub Markdown table (first column left, the
// others right aligned).
func (t *Table) Markdown(w io.Writer) {
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

func ErrString(m map[string]int64) string {
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
func tablePercentiles(c ReportConfig) (acq, acqRel []float64) {
	if len(c.Percentiles) > 0 {
		return c.Percentiles, c.Percentiles
	}
	return []float64{50, 99, 99.9}, []float64{50, 99}
}

// reportPercentiles are the percentiles of the per-metric tables and CSV.
func reportPercentiles(c ReportConfig) []float64 {
	if len(c.Percentiles) > 0 {
		return c.Percentiles
	}
	return DefaultPercentiles
}

func pctCell(l Latency, p float64) string {
	if l.Count == 0 {
		return "-"
	}
	v, _ := l.At(p)
	return format.Us(v)
}

// summaryTable is the headline table: throughput, acquire and
// acquire+release latency, outcomes (failed operations with their own
// latency), errors by kind, node errors by kind and client cost.
func summaryTable(rep *Report) *Table { return RunColumns(rep.Config).table(rep.Strategies) }

// RunColumns are the headline table's columns, one row per strategy.
func RunColumns(c ReportConfig) Columns[*StrategyResult] {
	acq, acqRel := tablePercentiles(c)
	cs := Columns[*StrategyResult]{
		{Head: "strategy", JSON: "name", Cell: func(s *StrategyResult) string {
			name := s.Name
			if s.Saturated {
				name += " (saturated)"
			}
			if s.Interrupted {
				name += " (interrupted)"
			}
			return name
		}},
		{Head: "ops/s", JSON: "ops_per_sec", Cell: func(s *StrategyResult) string { return format.Count(s.OpsPerSec) }},
	}
	if c.Rate > 0 {
		cs = append(cs, Column[*StrategyResult]{Head: "target/s", JSON: "target_rate", Cell: func(s *StrategyResult) string { return format.Count(s.TargetRate) }})
	}
	if contention(c) {
		cs = append(cs, Column[*StrategyResult]{Head: "acquired/s", JSON: "acquired_per_sec", Cell: func(s *StrategyResult) string { return format.Count(s.AcquiredPerSec) }})
	}
	for _, p := range acq {
		cs = append(cs, Column[*StrategyResult]{Head: "acq " + format.Percentile(p), JSON: "acquire", Cell: func(s *StrategyResult) string { return pctCell(s.Acquire, p) }})
	}
	for _, p := range acqRel {
		cs = append(cs, Column[*StrategyResult]{Head: "acq+rel " + format.Percentile(p), JSON: "acquire_release", Cell: func(s *StrategyResult) string { return pctCell(s.AcquireRelease, p) }})
	}
	return append(cs, Columns[*StrategyResult]{
		{Head: "acq+rel max", JSON: "acquire_release.max_us", Cell: func(s *StrategyResult) string {
			if s.AcquireRelease.Count == 0 {
				return "-"
			}
			return format.Us(s.AcquireRelease.MaxUs)
		}},
		{Head: "acq+rel ok", JSON: "acquired_released", Cell: func(s *StrategyResult) string { return fmtInt(s.Acquired - s.ReleaseFailed) }},
		{Head: "not acq", JSON: "not_acquired", Cell: func(s *StrategyResult) string { return fmtInt(s.NotAcquired) }},
		{Head: "failed", JSON: "failed", Cell: func(s *StrategyResult) string { return fmtInt(s.Failed) }},
		{Head: "fail p99", JSON: "failed_latency.p99_us", Cell: func(s *StrategyResult) string { return pctCell(s.FailedLat, 99) }},
		{Head: "errors", JSON: "errors", Cell: func(s *StrategyResult) string { return ErrString(s.Errors) }},
		{Head: "node errors", JSON: "node_errors", Cell: func(s *StrategyResult) string { return ErrString(s.NodeErrors) }},
		{Head: "allocs/op", JSON: "allocs_per_op", Cell: func(s *StrategyResult) string { return fmt.Sprintf("%.1f", s.AllocsPerOp) }},
		{Head: "cpu us/op", JSON: "cpu_us_per_op", Cell: func(s *StrategyResult) string { return fmt.Sprintf("%.1f", s.CPUUsPerOp) }},
	}...)
}

// warnings are the lines that must be read with the table: saturated
// open-loop runs, failing runs, an interrupted run.
func warnings(rep *Report) []string {
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
			out = append(out, fmt.Sprintf("%s: %d of %d operations failed (%s); node errors: %s", s.Name, s.Failed, s.Ops, ErrString(s.Errors), ErrString(s.NodeErrors)))
		}
		out = append(out, outageLines(s.Name, s.NodeOutages)...)
	}
	return out
}

// WriteTable prints the headline table for a terminal.
func WriteTable(w io.Writer, rep *Report) {
	fmt.Fprintln(w, RunDescription(rep.Config))
	summaryTable(rep).Write(w)
	for _, l := range warnings(rep) {
		fmt.Fprintln(w, "warning: "+l)
	}
}

// RunDescription is what a run measures, in one line: target, strategies,
// workers, loop, workload and keys. Run prints it first and the table
// under it.
func RunDescription(c ReportConfig) string {
	loop := c.Loop + " loop"
	if c.Rate > 0 {
		loop += fmt.Sprintf(" at %s ops/s", format.Count(c.Rate))
	}
	s := fmt.Sprintf("%s; %s, %d workers, %s, workload %s, keys %d%s", c.Target, strings.Join(c.Strategies, "/"), c.Workers, loop, c.Workload, c.Keys, workloadExtra(c))
	if c.Segment != nil {
		s += "; " + c.Segment.Describe(c.Rate, c.Workers, c.Keys)
	}
	return s
}

// contention reports whether the run's workers contend for keys (or hold
// them), so that hand-offs per second are worth a column and a section.
func contention(c ReportConfig) bool {
	return c.Workload == load.WorkloadContended || (c.KeysDist != "" && c.KeysDist != load.KeysRoundRobin) || c.Hold != "" || c.Keys < c.Workers
}

// workloadExtra describes -keys-dist and -hold when they are set.
func workloadExtra(c ReportConfig) string {
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
func writeContention(w io.Writer, rep *Report) {
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
	t := NewTable(head...)
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
		t.Row(row...)
	}
	t.Markdown(w)
	fmt.Fprintln(w)
}

// WriteCSV writes one row per strategy and metric: outcome counts, rates
// and the chosen percentiles in microseconds.
func WriteCSV(w io.Writer, rep *Report) error {
	var rows []metricRow
	for _, s := range rep.Strategies {
		for _, m := range load.Metrics {
			rows = append(rows, metricRow{s, m, s.Metric(m)})
		}
	}
	return MetricColumns(rep.Config).writeCSV(w, rows)
}

// metricRow is one metric of one strategy: a row of summary.csv.
type metricRow struct {
	s      *StrategyResult
	metric string
	l      Latency
}

// MetricColumns are summary.csv's columns ("*": the row's metric's
// latency object in the JSON).
func MetricColumns(c ReportConfig) Columns[metricRow] {
	cs := Columns[metricRow]{
		{CSV: "strategy", JSON: "name", Cell: func(r metricRow) string { return r.s.Name }},
		{CSV: "metric", Cell: func(r metricRow) string { return r.metric }},
		{CSV: "count", JSON: "*.count", Cell: func(r metricRow) string { return fmtInt(r.l.Count) }},
		{CSV: "ops", JSON: "ops", Cell: func(r metricRow) string { return fmtInt(r.s.Ops) }},
		{CSV: "ops_per_sec", JSON: "ops_per_sec", Cell: func(r metricRow) string { return csvFloat(r.s.OpsPerSec) }},
		{CSV: "target_rate", JSON: "target_rate", Cell: func(r metricRow) string { return csvFloat(r.s.TargetRate) }},
		{CSV: "saturated", JSON: "saturated", Cell: func(r metricRow) string { return fmtBool(r.s.Saturated) }},
		{CSV: "interrupted", JSON: "interrupted", Cell: func(r metricRow) string { return fmtBool(r.s.Interrupted) }},
		{CSV: "failed", JSON: "failed", Cell: func(r metricRow) string { return fmtInt(r.s.Failed) }},
		{CSV: "min_us", JSON: "*.min_us", Cell: func(r metricRow) string { return csvFloat(r.l.MinUs) }},
		{CSV: "mean_us", JSON: "*.mean_us", Cell: func(r metricRow) string { return csvFloat(r.l.MeanUs) }},
	}
	for _, p := range reportPercentiles(c) {
		cs = append(cs, Column[metricRow]{CSV: format.Percentile(p) + "_us", JSON: "*", Cell: func(r metricRow) string { v, _ := r.l.At(p); return csvFloat(v) }})
	}
	return append(cs, Column[metricRow]{CSV: "max_us", JSON: "*.max_us", Cell: func(r metricRow) string { return csvFloat(r.l.MaxUs) }})
}

// WriteJSON writes the -json object.
func WriteJSON(w io.Writer, rep *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// WriteMarkdown writes report.md.
func WriteMarkdown(w io.Writer, rep *Report) error {
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
	summaryTable(rep).Markdown(w)
	fmt.Fprintln(w)
	fmt.Fprintf(w, "![acquire+release latency by percentile](%s)\n\n", FilePlot)

	WriteLatencyTables(w, rep)

	WriteOutcomes(w, rep)

	writeContention(w, rep)
	WriteServerSection(w, rep)
	WriteCapacity(w, rep)

	writeConfigSection(w, c)
	writeEnvSection(w, e)
	fmt.Fprintf(w, "Files: [%s](%s) (the -json object), [%s](%s) (one row per strategy and metric), [%s](%s) (HdrHistogram interval log, ns, tags `<strategy>.<metric>`; merge logs of several machines with `redmux-bench merge`), [%s](%s), [%s](%s).\n",
		FileSummary, FileSummary, FileCSV, FileCSV, FileHlog, FileHlog, FilePlot, FilePlot, FilePlotAcquire, FilePlotAcquire)
	return nil
}

// WriteLatencyTables writes one table per metric, with the run's
// percentiles.
func WriteLatencyTables(w io.Writer, rep *Report) {
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
		t := NewTable(append(head, "max", "mean")...)
		for _, s := range rep.Strategies {
			l := s.Metric(m)
			row := []string{s.Name, fmt.Sprint(l.Count), f1(l.MinUs)}
			for _, p := range pcts {
				v, _ := l.At(p)
				row = append(row, f1(v))
			}
			t.Row(append(row, f1(l.MaxUs), f1(l.MeanUs))...)
		}
		t.Markdown(w)
		fmt.Fprintln(w)
	}

}

// WriteOutcomes writes the outcomes, errors and client cost per strategy.
func WriteOutcomes(w io.Writer, rep *Report) {
	fmt.Fprintln(w, "### Outcomes and errors")
	fmt.Fprintln(w)
	t := NewTable("strategy", "ops", "duration s", "acquired and released", "not acquired", "failed", "of which at release", "extended", "not extended", "op errors", "node errors", "allocs/op", "bytes/op", "cpu us/op", "harness cpu us/op")
	for _, s := range rep.Strategies {
		t.Row(s.Name, fmt.Sprint(s.Ops), fmt.Sprintf("%.2f", s.DurationS), fmt.Sprint(s.Acquired-s.ReleaseFailed), fmt.Sprint(s.NotAcquired),
			fmt.Sprint(s.Failed), fmt.Sprint(s.ReleaseFailed),
			fmt.Sprint(s.Extended), fmt.Sprint(s.NotExtended), ErrString(s.Errors), ErrString(s.NodeErrors),
			fmt.Sprintf("%.1f", s.AllocsPerOp), fmt.Sprintf("%.0f", s.BytesPerOp), fmt.Sprintf("%.2f", s.CPUUsPerOp), fmt.Sprintf("%.2f", s.HarnessCPUUsPerOp))
	}
	t.Markdown(w)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Every operation is in one outcome: acquired and released + not acquired + failed = ops (an operation whose release failed after it acquired is in failed, of which at release, only).")
	fmt.Fprintln(w)
	writeOutageTable(w, rep)
	fmt.Fprintln(w, "Op errors are operations that failed (no_quorum: too many nodes failed for a quorum; release_*/extend_*: the release or extension failed). Node errors count each node that failed within an operation (timeout, conn, server, protocol), including operations that still reached a quorum. Allocations and CPU are the benchmark process's (runtime.MemStats and getrusage deltas over the measured window) divided by operations; cpu us/op leaves out the load generator's own CPU, shown apart as harness cpu us/op (the interval collector's measured CPU time plus the load loop's calibrated cost per operation: clock reads and latency recording), so it is the client's cost. Allocations include the load loop's (none in steady state) but not the collector's.")
	fmt.Fprintln(w)

}

// writeOutageTable writes which node failed, how often and when, per
// strategy (nothing when no node failed).
func writeOutageTable(w io.Writer, rep *Report) {
	t := NewTable("strategy", "node", "address", "errors", "first error", "last error")
	n := 0
	for _, s := range rep.Strategies {
		for _, o := range s.NodeOutages {
			n++
			t.Row(s.Name, fmt.Sprint(o.Node), o.Addr, fmt.Sprint(o.Errors),
				fmt.Sprintf("%.2fs (%s)", o.FirstS, ShortTime(o.First)), fmt.Sprintf("%.2fs (%s)", o.LastS, ShortTime(o.Last)))
		}
	}
	if n == 0 {
		return
	}
	fmt.Fprintln(w, "Node errors by node: which node failed within operations, how many times, and when (seconds into the strategy's measured window, and UTC):")
	fmt.Fprintln(w)
	t.Markdown(w)
	fmt.Fprintln(w)
}

// writeConfigSection writes the run's configuration.
func writeConfigSection(w io.Writer, c ReportConfig) {
	fmt.Fprintln(w, "## Configuration")
	fmt.Fprintln(w)
	ct := NewTable("setting", "value")
	ct.Row("nodes", fmt.Sprintf("%d (%s)", len(c.Nodes), strings.Join(c.Nodes, ", ")))
	ct.Row("strategies", strings.Join(c.Strategies, ", "))
	ct.Row("workers (-c)", fmt.Sprint(c.Workers))
	if c.MuxConns > 0 {
		ct.Row("mux connections per node (-conns)", fmt.Sprint(c.MuxConns))
	} else {
		ct.Row("mux connections per node", fmt.Sprintf("mux default (%d)", mux.DefaultConns))
	}
	if c.MuxTransport != "" {
		ct.Row("mux transport (-transport)", c.MuxTransport)
	}
	if c.DirectWaitMs > 0 {
		ct.Row("mux direct wait (-direct-wait)", fmt.Sprintf("%gms", c.DirectWaitMs))
	}
	if c.Ops > 0 {
		ct.Row("operations per strategy (-n)", fmt.Sprint(c.Ops))
	} else {
		ct.Row("duration per strategy (-d)", fmt.Sprintf("%gs", c.DurationS))
	}
	ct.Row("warm-up per strategy", fmt.Sprintf("%gs", c.WarmupS))
	ct.Row("loop", c.Loop)
	if c.Rate > 0 {
		ct.Row("target rate (-rate)", fmt.Sprintf("%g ops/s (latency from each operation's intended start; saturated below %.0f%% of it achieved, or with operations left unstarted)", c.Rate, SaturationShare*100))
	}
	if c.Segment != nil {
		ct.Row("segment (-segment)", c.Segment.Describe(c.Rate, c.Workers, c.Keys)+" (workers, rate and keys in this report are this segment's; redmux-bench merge adds the segments' interval logs up)")
	}
	ct.Row("workload", c.Workload)
	ct.Row("keys", fmt.Sprint(c.Keys))
	ct.Row("key popularity (-keys-dist)", c.KeysDist)
	if c.Hold != "" {
		ct.Row("hold inside the lock (-hold)", fmt.Sprintf("%s (mean %gms; part of acquire+release latency)", c.Hold, c.HoldMeanMs))
	}
	ct.Row("ttl", fmt.Sprintf("%dms", c.TTLMs))
	ct.Row("per-node timeout", fmt.Sprintf("%gms", c.TimeoutMs))
	ct.Row("clock drift allowance", fmt.Sprintf("ttl*%g + %gms", c.DriftFactor, c.DriftMs))
	ct.Row("password", map[bool]string{true: "set (not shown)", false: "none"}[c.PasswordSet])
	if c.LatencyMs > 0 {
		ct.Row("added reply latency (-latency)", fmt.Sprintf("%gms on every node", c.LatencyMs))
	}
	if len(c.Faults) > 0 {
		ct.Row("faults (-fault)", strings.Join(c.Faults, ", "))
	}
	ct.Markdown(w)
	fmt.Fprintln(w)
}

// writeEnvSection writes the machine and build.
func writeEnvSection(w io.Writer, e Env) {
	fmt.Fprintln(w, "## Environment")
	fmt.Fprintln(w)
	et := NewTable("", "")
	et.Row("time (UTC)", e.Time)
	et.Row("go", e.GoVersion+" "+e.OS+"/"+e.Arch)
	et.Row("cpu", fmt.Sprintf("%s; %d logical CPUs, GOMAXPROCS %d", e.CPU, e.NumCPU, e.GOMAXPROCS))
	if e.Build.RevisionSource != "" {
		et.Row("module version", e.Build.Module)
		et.Row("revision", e.Build.Describe())
	} else if e.Revision != "" {
		et.Row("revision", e.Revision)
	}
	et.Row("server", e.Server)
	et.Row("server CPU measured with", e.ServerCPU)
	if e.LoadAvgStart != "" {
		et.Row("load average (1 min) at start, end", e.LoadAvgStart+", "+e.LoadAvgEnd)
	}
	et.Markdown(w)
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

func WriteServerSection(w io.Writer, rep *Report) {
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
	t := NewTable("strategy", "SET calls", "SET usec/call", "EVALSHA calls", "EVALSHA usec/call", "server CPU us/op/node", "nodes reporting")
	var notes []string
	for _, s := range rep.Strategies {
		c := s.Server
		if c == nil {
			t.Row(s.Name, "-", "-", "-", "-", "-", "0")
			continue
		}
		cpu := "-"
		if c.CPUUsPerOpPerNode > 0 {
			cpu = fmt.Sprintf("%.2f", c.CPUUsPerOpPerNode)
		}
		if c.NodesReporting == 0 {
			// Not measured, not zero (issue 48 item 4).
			t.Row(s.Name, "not read", "not read", "not read", "not read", cpu, "0")
			notes = append(notes, s.Name+": "+c.NotRead+".")
			continue
		}
		t.Row(s.Name, fmt.Sprint(c.SetCalls), usecCell(c.SetUsecPerCall, c.SetCalls), fmt.Sprint(c.EvalshaCalls),
			usecCell(c.EvalshaUsecPerCall, c.EvalshaCalls), cpu, fmt.Sprint(c.NodesReporting))
	}
	t.Markdown(w)
	fmt.Fprintln(w)
	for _, n := range notes {
		fmt.Fprintln(w, "Not read:", n)
		fmt.Fprintln(w)
	}
}
