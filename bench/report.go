package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Files written in the -out directory.
const (
	FileReport      = "report.md"
	FileSummary     = "summary.json"
	FileHlog        = "bench.hlog"
	FilePlot        = "percentiles.svg"
	FilePlotAcquire = "percentiles-acquire.svg"
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

// fmtUs renders a microsecond value with a unit that keeps it short.
func fmtUs(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fs", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.1fms", v/1e3)
	case v >= 1e3:
		return fmt.Sprintf("%.2fms", v/1e3)
	}
	return fmt.Sprintf("%.0fus", v)
}

func fmtCount(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

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

// summaryTable is the headline table: throughput, acquire and
// acquire+release latency, outcomes, errors and client cost.
func summaryTable(rep *Report) *table {
	t := newTable("strategy", "ops/s", "acq p50", "acq p99", "acq p99.9", "acq+rel p50", "acq+rel p99", "acq+rel max",
		"acquired", "not acq", "errors", "allocs/op", "cpu us/op")
	for _, s := range rep.Strategies {
		t.row(s.Name, fmtCount(s.OpsPerSec),
			fmtUs(s.Acquire.P50Us), fmtUs(s.Acquire.P99Us), fmtUs(s.Acquire.P999Us),
			fmtUs(s.AcquireRelease.P50Us), fmtUs(s.AcquireRelease.P99Us), fmtUs(s.AcquireRelease.MaxUs),
			fmt.Sprint(s.Acquired), fmt.Sprint(s.NotAcquired), errString(s.Errors),
			fmt.Sprintf("%.1f", s.AllocsPerOp), fmt.Sprintf("%.1f", s.CPUUsPerOp))
	}
	return t
}

// WriteTable prints the headline table for a terminal.
func WriteTable(w io.Writer, rep *Report) {
	c := rep.Config
	fmt.Fprintf(w, "%s; %s, %d workers, %s loop, workload %s, keys %d\n", c.Target, strings.Join(c.Strategies, "/"), c.Workers, c.Loop, c.Workload, c.Keys)
	summaryTable(rep).write(w)
}

// WriteJSON writes the -json object.
func WriteJSON(w io.Writer, rep *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func writeBytes(b []byte) func(io.Writer) error {
	return func(w io.Writer) error { _, err := w.Write(b); return err }
}

// writeOutputs writes -json, -hlog and the -out directory.
func writeOutputs(cfg *Config, rep *Report) error {
	if cfg.JSON != "" {
		if err := writeFile(cfg.JSON, func(w io.Writer) error { return WriteJSON(w, rep) }); err != nil {
			return err
		}
	}
	if cfg.Hlog != "" {
		if err := writeFile(cfg.Hlog, writeBytes(rep.hlog)); err != nil {
			return err
		}
	}
	if cfg.Out == "" {
		return nil
	}
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return err
	}
	files := []struct {
		name  string
		write func(io.Writer) error
	}{
		{FileSummary, func(w io.Writer) error { return WriteJSON(w, rep) }},
		{FileHlog, writeBytes(rep.hlog)},
		{FilePlot, func(w io.Writer) error { return WritePlot(w, rep, MetricAcquireRelease) }},
		{FilePlotAcquire, func(w io.Writer) error { return WritePlot(w, rep, MetricAcquire) }},
		{FileReport, func(w io.Writer) error { return WriteMarkdown(w, rep) }},
	}
	for _, f := range files {
		if err := writeFile(filepath.Join(cfg.Out, f.name), f.write); err != nil {
			return err
		}
	}
	return nil
}

// WriteMarkdown writes report.md.
func WriteMarkdown(w io.Writer, rep *Report) error {
	c, e := rep.Config, rep.Env
	title := c.Title
	if title == "" {
		title = "redmux-bench report"
	}
	fmt.Fprintf(w, "# %s\n\n", title)
	fmt.Fprintf(w, "Target: %s. %s loop, workload `%s`, %d workers, %d keys.\n\n", c.Target, strings.ToUpper(c.Loop[:1])+c.Loop[1:], c.Workload, c.Workers, c.Keys)
	fmt.Fprintf(w, "Reproduce:\n\n    %s\n\n", c.Command)
	fmt.Fprintln(w, "## Results")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Latency per operation (us/ms), throughput over the measured window, client cost per operation (an operation = one acquire attempt, plus its release when acquired).")
	fmt.Fprintln(w)
	summaryTable(rep).markdown(w)
	fmt.Fprintln(w)
	fmt.Fprintf(w, "![acquire+release latency by percentile](%s)\n\n", FilePlot)

	for i, m := range Metrics {
		fmt.Fprintf(w, "### %s latency (us)\n\n", []string{"Acquire", "Release", "Acquire+release"}[i])
		t := newTable("strategy", "count", "min", "p50", "p90", "p99", "p99.9", "p99.99", "max", "mean")
		for _, s := range rep.Strategies {
			l := s.metric(m)
			t.row(s.Name, fmt.Sprint(l.Count), f1(l.MinUs), f1(l.P50Us), f1(l.P90Us), f1(l.P99Us), f1(l.P999Us), f1(l.P9999Us), f1(l.MaxUs), f1(l.MeanUs))
		}
		t.markdown(w)
		fmt.Fprintln(w)
	}

	fmt.Fprintln(w, "### Outcomes and errors")
	fmt.Fprintln(w)
	t := newTable("strategy", "ops", "duration s", "acquired", "not acquired", "extended", "not extended", "op errors", "node errors", "allocs/op", "bytes/op", "cpu us/op")
	for _, s := range rep.Strategies {
		t.row(s.Name, fmt.Sprint(s.Ops), fmt.Sprintf("%.2f", s.DurationS), fmt.Sprint(s.Acquired), fmt.Sprint(s.NotAcquired),
			fmt.Sprint(s.Extended), fmt.Sprint(s.NotExtended), errString(s.Errors), errString(s.NodeErrors),
			fmt.Sprintf("%.1f", s.AllocsPerOp), fmt.Sprintf("%.0f", s.BytesPerOp), fmt.Sprintf("%.2f", s.CPUUsPerOp))
	}
	t.markdown(w)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Op errors are operations that failed (no_quorum: too many nodes failed for a quorum; release_*/extend_*: the release or extension failed). Node errors count each node that failed within an operation (timeout, conn, server, protocol), including operations that still reached a quorum. Allocations and CPU are the benchmark process's (runtime.MemStats and getrusage deltas over the measured window) divided by operations: the client's cost, recording included.")
	fmt.Fprintln(w)

	writeServerSection(w, rep)
	writeCapacity(w, rep)

	fmt.Fprintln(w, "## Configuration")
	fmt.Fprintln(w)
	ct := newTable("setting", "value")
	ct.row("nodes", fmt.Sprintf("%d (%s)", len(c.Nodes), strings.Join(c.Nodes, ", ")))
	ct.row("strategies", strings.Join(c.Strategies, ", "))
	ct.row("workers (-c)", fmt.Sprint(c.Workers))
	if c.MuxLanes > 0 {
		ct.row("mux lanes (-lanes)", fmt.Sprint(c.MuxLanes))
	} else {
		ct.row("mux lanes", "mux default (2*GOMAXPROCS)")
	}
	if c.Ops > 0 {
		ct.row("operations per strategy (-n)", fmt.Sprint(c.Ops))
	} else {
		ct.row("duration per strategy (-d)", fmt.Sprintf("%gs", c.DurationS))
	}
	ct.row("warm-up per strategy", fmt.Sprintf("%gs", c.WarmupS))
	ct.row("loop", c.Loop)
	if c.Rate > 0 {
		ct.row("target rate (-rate)", fmt.Sprintf("%g ops/s (latency from each operation's intended start)", c.Rate))
	}
	ct.row("workload", c.Workload)
	ct.row("keys", fmt.Sprint(c.Keys))
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
	fmt.Fprintln(w, "## Environment")
	fmt.Fprintln(w)
	et := newTable("", "")
	et.row("time (UTC)", e.Time)
	et.row("go", e.GoVersion+" "+e.OS+"/"+e.Arch)
	et.row("cpu", fmt.Sprintf("%s; %d logical CPUs, GOMAXPROCS %d", e.CPU, e.NumCPU, e.GOMAXPROCS))
	if e.Revision != "" {
		et.row("revision", e.Revision)
	}
	et.row("server", e.Server)
	et.row("server CPU measured with", e.ServerCPU)
	et.markdown(w)
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Files: [%s](%s) (the -json object), [%s](%s) (HdrHistogram interval log, ns, tags `<strategy>.<metric>`; merge logs of several machines with `redmux-bench merge`), [%s](%s), [%s](%s).\n",
		FileSummary, FileSummary, FileHlog, FileHlog, FilePlot, FilePlot, FilePlotAcquire, FilePlotAcquire)
	return nil
}

func (s *StrategyResult) metric(m string) Latency {
	switch m {
	case MetricAcquire:
		return s.Acquire
	case MetricRelease:
		return s.Release
	}
	return s.AcquireRelease
}

// usecCell shows "n/a" when a server counts calls but not their time (the
// fake server reports usec=0).
func usecCell(v float64, calls int64) string {
	if v == 0 && calls > 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", v)
}

func writeServerSection(w io.Writer, rep *Report) {
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
		t.row(s.Name, fmt.Sprint(c.SetCalls), usecCell(c.SetUsecPerCall, c.SetCalls), fmt.Sprint(c.EvalshaCalls),
			usecCell(c.EvalshaUsecPerCall, c.EvalshaCalls), cpu, fmt.Sprint(c.NodesReporting))
	}
	t.markdown(w)
	fmt.Fprintln(w)
}
