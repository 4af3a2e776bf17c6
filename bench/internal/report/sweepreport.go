package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/redmux/redmux/bench/internal/format"
	"github.com/redmux/redmux/bench/internal/plot"
)

// Files written in a sweep's -out directory.
const (
	FileSweepReport = "sweep.md"
	FileSweepJSON   = "sweep.json"
	FileSweepCSV    = "sweep.csv"
	FileSweepPlot   = "sweep.svg"
	FileSweepHlog   = "sweep.hlog"
)

func kneeCell(ss *SweepStrategy) string {
	switch {
	case ss.Knee == nil:
		return "none (no step held)"
	case !ss.Saturated:
		return "> " + format.Count(ss.KneeRate)
	}
	return format.Count(ss.KneeRate)
}

// WriteSweepTable prints the steps and knees for a terminal.
func WriteSweepTable(w io.Writer, rep *SweepReport) {
	c := rep.Config
	fmt.Fprintf(w, "objective for every strategy: %s (%s)\n", rep.SLO, rep.SLOSource)
	fmt.Fprintf(w, "%s; sweep of %s, %d workers, workload %s, keys %d, %gs steps\n", c.Target, strings.Join(c.Strategies, "/"), c.Workers, c.Workload, c.Keys, c.DurationS)
	StepColumns(c).table(stepRows(rep)).Write(w)
	for _, ss := range rep.Strategies {
		fmt.Fprintf(w, "%s: capacity %s ops/s under %s", ss.Name, kneeCell(ss), ss.SLO)
		if ss.Bound != "" {
			fmt.Fprintf(w, "; bound by %s", ss.Bound)
		}
		if n := starvedNote(ss); n != "" {
			fmt.Fprintf(w, "; %s", n)
		}
		fmt.Fprintln(w)
		if h := NoKneeHint(ss); h != "" {
			fmt.Fprintf(w, "  hint: %s\n", h)
		}
		for _, n := range rerunNotes(ss) {
			fmt.Fprintf(w, "  %s\n", n)
		}
		for _, n := range stepOutageNotes(ss) {
			fmt.Fprintf(w, "  %s\n", n)
		}
	}
	if rep.Config.CapacityRate > 0 {
		for _, p := range provisionAll(rep) {
			fmt.Fprintf(w, "%s for %s ops/s: %s\n", p.name, format.Count(rep.Config.CapacityRate), p.Line())
		}
	}
	if rep.Interrupted {
		fmt.Fprintln(w, "warning: interrupted: the report covers the steps measured")
	}
}

// WriteSweepCSV writes one row per strategy and step.
func WriteSweepCSV(w io.Writer, rep *SweepReport) error {
	return StepColumns(rep.Config).writeCSV(w, stepRows(rep))
}

// stepRows are every strategy's steps, in order.
func stepRows(rep *SweepReport) []stepRow {
	var rows []stepRow
	for _, ss := range rep.Strategies {
		for _, st := range ss.Steps {
			rows = append(rows, stepRow{ss, st})
		}
	}
	return rows
}

// stepRow is one step of one strategy: a row of the sweep's terminal
// table and of sweep.csv.
type stepRow struct {
	ss *SweepStrategy
	st *SweepStep
}

// StepColumns are the sweep's terminal table's columns and sweep.csv's,
// in one list (JSON: the step's field; "*": its latency object).
func StepColumns(c ReportConfig) Columns[stepRow] {
	cs := Columns[stepRow]{
		{Head: "strategy", CSV: "strategy", Cell: func(r stepRow) string { return r.ss.Name }},
		{Head: "target/s", CSV: "target_rate", JSON: "target_rate", Cell: func(r stepRow) string { return format.Count(r.st.TargetRate) }, Raw: func(r stepRow) string { return csvFloat(r.st.TargetRate) }},
		{Head: "ops/s", CSV: "ops_per_sec", JSON: "ops_per_sec", Cell: func(r stepRow) string { return format.Count(r.st.OpsPerSec) }, Raw: func(r stepRow) string { return csvFloat(r.st.OpsPerSec) }},
		{CSV: "ops", JSON: "ops", Cell: func(r stepRow) string { return fmtInt(r.st.Ops) }},
		{CSV: "saturated", JSON: "saturated", Cell: func(r stepRow) string { return fmtBool(r.st.Saturated) }},
		{CSV: "failed", JSON: "failed", Cell: func(r stepRow) string { return fmtInt(r.st.Failed) }},
		{Head: "p50", JSON: "*.p50_us", Cell: func(r stepRow) string { return format.Us(r.st.Latency.P50Us) }},
		{Head: "p99", JSON: "*.p99_us", Cell: func(r stepRow) string { return format.Us(r.st.Latency.P99Us) }},
		{Head: "p99.9", JSON: "*.p999_us", Cell: func(r stepRow) string { return format.Us(r.st.Latency.P999Us) }},
		{Head: "objective", JSON: "slo_us", Cell: func(r stepRow) string { return format.Percentile(r.ss.SLOPct) + " " + format.Us(r.st.SLOUs) }},
		{Head: "failed", CSV: "failed_share", JSON: "failed_share", Cell: func(r stepRow) string { return fmt.Sprintf("%.2f%%", 100*r.st.FailedShare) }, Raw: func(r stepRow) string { return csvFloat(r.st.FailedShare) }},
		{CSV: "held", JSON: "held", Cell: func(r stepRow) string { return fmtBool(r.st.Held) }},
		{CSV: "knee", Cell: func(r stepRow) string { return fmtBool(r.st == r.ss.Knee) }},
		{CSV: "refinement", JSON: "refinement", Cell: func(r stepRow) string { return fmtBool(r.st.Refinement) }},
		{CSV: "repeated", JSON: "repeated", Cell: func(r stepRow) string { return fmtBool(r.st.Repeated) }},
		{CSV: "slo", Cell: func(r stepRow) string {
			return format.Percentile(r.ss.SLOPct) + "<" + csvFloat(r.ss.SLOBudgetUs) + "us"
		}},
		{CSV: "slo_us", JSON: "slo_us", Cell: func(r stepRow) string { return csvFloat(r.st.SLOUs) }},
		{CSV: "min_us", JSON: "*.min_us", Cell: func(r stepRow) string { return csvFloat(r.st.Latency.MinUs) }},
		{CSV: "mean_us", JSON: "*.mean_us", Cell: func(r stepRow) string { return csvFloat(r.st.Latency.MeanUs) }},
	}
	for _, p := range reportPercentiles(c) {
		cs = append(cs, Column[stepRow]{CSV: format.Percentile(p) + "_us", JSON: "*", Cell: func(r stepRow) string { v, _ := r.st.Latency.At(p); return csvFloat(v) }})
	}
	f := func(csv, json string, v func(*SweepStep) float64) Column[stepRow] {
		return Column[stepRow]{CSV: csv, JSON: json, Cell: func(r stepRow) string { return csvFloat(v(r.st)) }}
	}
	return append(cs, Columns[stepRow]{
		f("max_us", "*.max_us", func(st *SweepStep) float64 { return st.Latency.MaxUs }),
		f("client_cpu_us_per_op", "client_cpu_us_per_op", func(st *SweepStep) float64 { return st.ClientCPUUsPerOp }),
		f("server_cpu_us_per_op_per_node", "server_cpu_us_per_op_per_node", func(st *SweepStep) float64 { return st.ServerCPUUsPerOpPerNode }),
		f("server_cpu_max_node_us_per_op", "server_cpu_max_node_us_per_op", func(st *SweepStep) float64 { return st.ServerCPUMaxNodeUsPerOp }),
		f("worker_busy_share", "worker_busy_share", func(st *SweepStep) float64 { return st.WorkerBusyShare }),
		f("mean_service_us", "mean_service_us", func(st *SweepStep) float64 { return st.MeanServiceUs }),
		{CSV: "interrupted", JSON: "interrupted", Cell: func(r stepRow) string { return fmtBool(r.st.Interrupted) }},
		{CSV: "hlog_tag", JSON: "hlog_tag", Cell: func(r stepRow) string { return r.st.Tag }},
		{CSV: "why", JSON: "why", Cell: func(r stepRow) string { return r.st.Why }},
		{Head: "verdict", Cell: func(r stepRow) string {
			verdict := "held"
			if !r.st.Held {
				verdict = r.st.Why
			}
			if r.st.Repeated {
				verdict += " (run again)"
			}
			if r.st.SetAside {
				verdict += " (set aside: a heavier step held)"
			}
			return verdict
		}},
		{CSV: "set_aside", JSON: "set_aside", Cell: func(r stepRow) string { return fmtBool(r.st.SetAside) }},
		f("load_avg", "load_avg", func(st *SweepStep) float64 { return st.LoadAvg }),
		f("machine_busy_cores", "machine_busy_cores", func(st *SweepStep) float64 { return st.MachineBusyCores }),
		f("other_cores", "other_cores", func(st *SweepStep) float64 { return st.OtherCores }),
		f("steal_share", "steal_share", func(st *SweepStep) float64 { return st.StealShare }),
	}...)
}

// WriteSweepJSON writes sweep.json.
func WriteSweepJSON(w io.Writer, rep *SweepReport) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// WriteSweepMarkdown writes sweep.md: the capacity report.
func WriteSweepMarkdown(w io.Writer, rep *SweepReport) error {
	c, e := rep.Config, rep.Env
	title := c.Title
	if title == "" {
		title = "redmux-bench capacity sweep"
	}
	fmt.Fprintf(w, "# %s\n\n", title)
	if rep.Interrupted {
		fmt.Fprintf(w, "> **Warning:** interrupted: the report covers the steps measured.\n\n")
	}
	fmt.Fprintf(w, "Target: %s. Open-loop steps of rising rate, workload `%s`, %d workers, %d keys%s; each step warmed up for %gs at its own rate, then measured for %gs. Machine: %s, %d logical CPUs (client and local servers share them", c.Target, c.Workload, c.Workers, c.Keys, workloadExtra(c), c.WarmupS, c.DurationS, e.CPU, e.NumCPU)
	if e.LoadAvgStart != "" {
		fmt.Fprintf(w, "; load average %s at the start, %s at the end", e.LoadAvgStart, e.LoadAvgEnd)
	}
	fmt.Fprint(w, ").\n\n")
	fmt.Fprintf(w, "Reproduce:\n\n    %s\n\n", c.Command)
	fmt.Fprintln(w, "## Capacity")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "**Objective, the same for every strategy: %s** (%s).\n\n", rep.SLO, rep.SLOSource)
	fmt.Fprintf(w, "A step holds when it keeps up with its rate (achieved at least %.0f%% of the target, no growing backlog), at most %g%% of its operations fail, and the objective's percentile of every operation's latency (from its intended start to its end; failures count at their latency to failure) is within the objective. The capacity (the knee) is the highest rate that held with every lighter step holding too, except lone failures: a step that did not hold in either of its runs while the next heavier step held is set aside (a heavier rate that holds shows the lighter one is not past capacity).\n\n", SaturationShare*100, MaxFailedShare*100)
	WriteKneeTable(w, rep)
	fmt.Fprintf(w, "![latency against throughput](%s)\n\n", FileSweepPlot)
	WriteProvisioning(w, rep)
	WriteHeadroom(w, rep)

	writeStepsSection(w, rep)

	writeSweepConfig(w, c, e)
	fmt.Fprintf(w, "Files: [%s](%s), [%s](%s) (one row per strategy and step), [%s](%s) (HdrHistogram interval log, ns, tags `<strategy>.r<rate>.<metric>`, `<strategy>.r<rate>.run2.<metric>` for a step run again, and `<strategy>.probe.<metric>`; each step's tag is its `hlog_tag` in sweep.json), [%s](%s).\n",
		FileSweepJSON, FileSweepJSON, FileSweepCSV, FileSweepCSV, FileSweepHlog, FileSweepHlog, FileSweepPlot, FileSweepPlot)
	return nil
}

// WriteKneeTable writes each strategy's capacity and its figures at the
// knee, and a hint for a strategy with no knee.
func WriteKneeTable(w io.Writer, rep *SweepReport) {
	kt := NewTable("strategy", "capacity ops/s", "objective", "at the knee: p50", "p99", "p99.9", "client CPU us/op", "server CPU us/op/node", "client cores", "server cores/node", "bound by")
	for _, ss := range rep.Strategies {
		k := ss.Knee
		if k == nil {
			kt.Row(ss.Name, kneeCell(ss), ss.SLO, "-", "-", "-", "-", "-", "-", "-", "-")
			continue
		}
		srv, srvCores := "-", "-"
		if k.ServerCPUUsPerOpPerNode > 0 {
			srv = fmt.Sprintf("%.1f", k.ServerCPUUsPerOpPerNode)
			srvCores = fmt.Sprintf("%.2f", ss.KneeRate*k.ServerCPUUsPerOpPerNode/1e6)
		}
		bound := ss.Bound
		if bound == "" {
			bound = "not reached"
		}
		kt.Row(ss.Name, kneeCell(ss), ss.SLO, format.Us(k.Latency.P50Us), format.Us(k.Latency.P99Us), format.Us(k.Latency.P999Us),
			fmt.Sprintf("%.1f", k.ClientCPUUsPerOp), srv, fmt.Sprintf("%.2f", ss.KneeRate*k.ClientCPUUsPerOp/1e6), srvCores, bound)
	}
	kt.Markdown(w)
	fmt.Fprintln(w)
	for _, ss := range rep.Strategies {
		if h := NoKneeHint(ss); h != "" {
			fmt.Fprintf(w, "**%s: no step held.** %s\n\n", ss.Name, h)
		}
	}
	for _, ss := range rep.Strategies {
		if n := starvedNote(ss); n != "" {
			fmt.Fprintf(w, "> **Warning: %s: %s.**\n\n", ss.Name, n)
		}
	}
	for _, ss := range rep.Strategies {
		if notes := rerunNotes(ss); len(notes) > 0 {
			fmt.Fprintf(w, "**%s: steps run again or set aside.** %s\n\n", ss.Name, strings.Join(notes, " "))
		}
	}
	for _, ss := range rep.Strategies {
		if notes := stepOutageNotes(ss); len(notes) > 0 {
			fmt.Fprintf(w, "**%s: nodes that failed.** %s\n\n", ss.Name, strings.Join(notes, " "))
		}
	}
}

// stepOutageNotes names, per step, the nodes that failed within its
// operations, with their error counts and when (the step's measured
// window).
func stepOutageNotes(ss *SweepStrategy) []string {
	var out []string
	for _, st := range ss.Steps {
		for _, o := range st.NodeOutages {
			out = append(out, fmt.Sprintf("at %s ops/s (%s): %s.", format.Count(st.TargetRate), st.Tag, o))
		}
	}
	return out
}

// starvedNote says that the machine was CPU-starved during a strategy's
// steps, unless its "bound by" says so already ("" when it was not).
func starvedNote(ss *SweepStrategy) string {
	if ss.Starved == "" || strings.Contains(ss.Bound, "starved") {
		return ""
	}
	return "this machine was CPU-starved by other work (" + ss.Starved + "): its latencies, knee and costs are this machine's, and the Provisioning figures upper bounds"
}

// rerunNotes says which of a strategy's steps were run again and why, and
// which were set aside as lone failures below a heavier step that held.
func rerunNotes(ss *SweepStrategy) []string {
	var out []string
	for i, st := range ss.Steps {
		switch {
		case st.Repeated:
			why := st.Why
			if why == "" {
				why = "it did not hold"
			}
			if len(st.Errors) > 0 {
				why += " (" + ErrString(st.Errors) + ")"
			}
			outcome := "the re-run was not measured"
			for _, again := range ss.Steps[i+1:] {
				if again.TargetRate == st.TargetRate && !again.Repeated {
					outcome = "the re-run held"
					if !again.Held {
						outcome = "the re-run did not hold either (" + again.Why + ")"
					}
					break
				}
			}
			out = append(out, fmt.Sprintf("%s ops/s was run again: %s; %s.", format.Count(st.TargetRate), why, outcome))
		case st.SetAside:
			out = append(out, fmt.Sprintf("%s ops/s did not hold (%s) and was set aside: the next heavier step held, so it is a lone failure, not the knee.", format.Count(st.TargetRate), st.Why))
		}
	}
	return out
}

// writeStepsSection writes every step of every strategy.
func writeStepsSection(w io.Writer, rep *SweepReport) {
	c := rep.Config
	fmt.Fprintln(w, "## Steps")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Latency of every operation (us/ms). Refinement steps bisect the interval between the last coarse step that held and the first that did not. A step that did not hold (missed the latency objective, did not keep up with its rate, or had more than 1% of its operations fail) was run again at once and the second run's verdict stands: a lone stall or a node paused for a moment is not a knee, an overload repeats (the lightest step is run again before the objective is derived when it failed or did not keep up, so that a glitch does not set the automatic objective). A step that did not hold in both runs while the next heavier step held is set aside, not the knee. Both runs are listed (each with its own tag in sweep.hlog: `.run2` added to the second); the plot shows the second. A step cut short by Ctrl-C is marked interrupted and not judged. *Workers busy* is the share of the step's time the -c workers spent in operations (near 100%: the workers were the limit). Server CPU is per node, the mean and (in brackets) the busiest node. *Machine*: the 1-minute load average at the step's end, the CPUs other processes than this one and its local servers kept busy, and the share of CPU time stolen by the hypervisor; marked CPU-starved past the thresholds that bound the knee by the machine (README).")
	fmt.Fprintln(w)
	pcts := reportPercentiles(c)
	head := []string{"strategy", "target ops/s", "achieved", "ops"}
	for _, p := range pcts {
		head = append(head, format.Percentile(p))
	}
	head = append(head, "max", "failed", "client CPU us/op", "server CPU us/op/node (busiest)", "workers busy", "machine: load avg, other CPUs, steal", "verdict")
	t := NewTable(head...)
	for _, ss := range rep.Strategies {
		for _, st := range ss.Steps {
			row := []string{ss.Name, format.Count(st.TargetRate), format.Count(st.OpsPerSec), fmt.Sprint(st.Ops)}
			for _, p := range pcts {
				v, _ := st.Latency.At(p)
				row = append(row, format.Us(v))
			}
			srv := "-"
			if st.ServerCPUUsPerOpPerNode > 0 {
				srv = fmt.Sprintf("%.1f (%.1f)", st.ServerCPUUsPerOpPerNode, max(st.ServerCPUMaxNodeUsPerOp, st.ServerCPUUsPerOpPerNode))
			}
			verdict := "held"
			if !st.Held {
				verdict = st.Why
			}
			if st == ss.Knee {
				verdict = "**knee**"
				if !ss.Saturated {
					verdict = "held, the highest rate tried (the knee is above it)"
				}
			}
			if st.Refinement {
				verdict += " (refinement)"
			}
			if st.Repeated {
				verdict += " (run again)"
			}
			if st.SetAside {
				verdict += " (set aside: a heavier step held)"
			}
			row = append(row, format.Us(st.Latency.MaxUs), fmt.Sprintf("%d (%.2f%%)", st.Failed, 100*st.FailedShare),
				fmt.Sprintf("%.1f", st.ClientCPUUsPerOp), srv, fmt.Sprintf("%.0f%%", 100*st.WorkerBusyShare), machineCell(st, rep.Env.NumCPU), verdict)
			t.Row(row...)
		}
	}
	t.Markdown(w)
	fmt.Fprintln(w)
	for _, ss := range rep.Strategies {
		if ss.ProbeOpsPerSec > 0 {
			fmt.Fprintf(w, "%s: steps spaced up to the closed-loop probe's %s ops/s (%d workers as fast as they go).\n", ss.Name, format.Count(ss.ProbeOpsPerSec), c.Workers)
		}
	}
	fmt.Fprintln(w)

}

// machineCell is a step's machine figures: load average, CPUs used by
// other processes, steal ("-" when not measured); numCPU is the measuring
// machine's (Env.NumCPU), not the one writing the report (render).
func machineCell(st *SweepStep, numCPU int) string {
	if st.LoadAvg == 0 && st.MachineBusyCores == 0 {
		return "-"
	}
	c := fmt.Sprintf("%.1f, %.2f, %.0f%%", st.LoadAvg, st.OtherCores, 100*st.StealShare)
	if st.Starved(numCPU) != "" {
		c += " (CPU-starved)"
	}
	return c
}

// writeSweepConfig writes the sweep's configuration and environment.
func writeSweepConfig(w io.Writer, c ReportConfig, e Env) {
	fmt.Fprintln(w, "## Configuration and environment")
	fmt.Fprintln(w)
	ct := NewTable("setting", "value")
	ct.Row("nodes", fmt.Sprintf("%d (%s)", len(c.Nodes), strings.Join(c.Nodes, ", ")))
	ct.Row("workers (-c)", fmt.Sprint(c.Workers))
	ct.Row("ttl, per-node timeout", fmt.Sprintf("%dms, %gms", c.TTLMs, c.TimeoutMs))
	if c.LatencyMs > 0 {
		ct.Row("added reply latency (-latency)", fmt.Sprintf("%gms on every node", c.LatencyMs))
	}
	if c.NodeCap > 0 {
		ct.Row("node throughput cap (-node-cap)", fmt.Sprintf("%g commands/s per node", c.NodeCap))
	}
	if len(c.Faults) > 0 {
		ct.Row("faults (-fault)", strings.Join(c.Faults, ", "))
	}
	ct.Row("time (UTC)", e.Time)
	ct.Row("go", e.GoVersion+" "+e.OS+"/"+e.Arch)
	ct.Row("cpu", fmt.Sprintf("%s; %d logical CPUs, GOMAXPROCS %d", e.CPU, e.NumCPU, e.GOMAXPROCS))
	if e.Build.RevisionSource != "" {
		ct.Row("module version", e.Build.Module)
		ct.Row("revision", e.Build.Describe())
	} else if e.Revision != "" {
		ct.Row("revision", e.Revision)
	}
	ct.Row("server", e.Server)
	ct.Row("server CPU measured with", e.ServerCPU)
	if e.LoadAvgStart != "" {
		ct.Row("load average (1 min) at start, end", e.LoadAvgStart+", "+e.LoadAvgEnd+fmt.Sprintf(" (on %d logical CPUs; this benchmark's own processes included)", e.NumCPU))
	}
	ct.Markdown(w)
	fmt.Fprintln(w)
}

// NoKneeHint says what to change when no step of a strategy held ("" when
// one did).
func NoKneeHint(ss *SweepStrategy) string {
	if ss.Knee != nil || len(ss.Steps) == 0 {
		return ""
	}
	var light *SweepStep
	for _, st := range ss.Steps {
		if !st.Interrupted && (light == nil || st.TargetRate < light.TargetRate) {
			light = st
		}
	}
	if light == nil {
		return "every step was interrupted; run the sweep again."
	}
	switch {
	case light.FailedShare > MaxFailedShare:
		return fmt.Sprintf("its lightest step (%s ops/s) had %.1f%% of its operations fail (%s): check the nodes and -timeout before any objective can hold.", format.Count(light.TargetRate), 100*light.FailedShare, ErrString(light.Errors))
	case light.Saturated:
		return fmt.Sprintf("its lightest step (%s ops/s) did not keep up (%s): start lower with -rates, or raise -c.", format.Count(light.TargetRate), light.Saturation)
	}
	return fmt.Sprintf("its lightest step (%s ops/s) measured %s %s against the objective's %s: loosen -slo to at least %s (e.g. -slo '%s<%s'), or start lower with -rates if the latency comes from load.",
		format.Count(light.TargetRate), format.Percentile(ss.SLOPct), format.Us(light.SLOUs), format.Us(ss.SLOBudgetUs), format.Us(light.SLOUs), format.Percentile(ss.SLOPct), durLabelUs(light.SLOUs*1.5))
}

// durLabelUs is a duration of us microseconds for a flag (-slo), rounded up
// to two significant digits.
func durLabelUs(usv float64) string {
	d := time.Duration(math.Ceil(usv)) * time.Microsecond
	switch {
	case d >= 10*time.Millisecond:
		d = d.Round(time.Millisecond)
	case d >= time.Millisecond:
		d = d.Round(100 * time.Microsecond)
	case d >= 100*time.Microsecond:
		d = d.Round(10 * time.Microsecond)
	}
	return d.String()
}

// Provision is one strategy's plan for -capacity-rate.
type Provision struct {
	name string
	// knee is the capacity one client process and one group held (Lower:
	// a lower bound when the sweep did not saturate, and then every
	// figure derived from it an upper bound).
	knee  float64
	Lower bool
	// starved: the machine was CPU-starved at the knee, so the knee is
	// low and the costs high: every figure is an upper bound too.
	starved  bool
	clientUs float64 // client CPU us/op at a unit's rate (fitted)
	serverUs float64 // busiest node's CPU us/op at the whole rate on one group (fitted; 0: unknown)
	// Units are copies of what was measured (one client process of -c
	// workers and one Redlock group, keys spread over the groups), each
	// at Utilisation of the knee.
	Units     int
	ClientCPU float64 // client cores for the target rate, at Utilisation
	nodeCPU   float64 // one node's cores if one group took the whole rate
	Groups    int     // groups the servers' CPU (or a planted cap) needs alone
	fit       *CostFit
	None      string // why there is no plan
}

// atMost prefixes a figure derived from a sweep that never reached its
// knee: it is an upper bound.
func (p Provision) atMost(v string) string {
	if p.Lower || p.starved {
		return "at most " + v
	}
	return v
}

// Line is the plan in one line (the Provisioning table's notes).
func (p Provision) Line() string {
	if p.None != "" {
		return p.None
	}
	srv := "server cores unknown (no server CPU figure)"
	if p.serverUs > 0 {
		srv = fmt.Sprintf("servers %s cores per node on one group (%s group(s) by server CPU alone)", p.atMost(fmt.Sprintf("%.2f", p.nodeCPU)), p.atMost(fmt.Sprint(p.Groups)))
	}
	out := fmt.Sprintf("%s unit(s) of one client process + one group; client %s cores in all; %s", p.atMost(fmt.Sprint(p.Units)), p.atMost(fmt.Sprintf("%.2f", p.ClientCPU)), srv)
	switch {
	case p.Lower:
		out += fmt.Sprintf(" (upper bounds: the sweep held up to %s ops/s, its highest step, without reaching a knee)", format.Count(p.knee))
	case p.starved:
		out += " (upper bounds: this machine's CPU was starved by other work at the knee, so the knee is low and the costs high)"
	}
	if p.fit.Caveat() != "" {
		out += fmt.Sprintf(" (costs fitted over only %d step(s): not a fit)", p.fit.Steps)
	}
	return out
}

// ProvisionFor sizes the target rate r from a strategy's knee and its CPU
// costs fitted over the steps that held.
func ProvisionFor(ss *SweepStrategy, r float64, nodeCap float64) Provision {
	p := Provision{name: ss.Name}
	if ss.Knee == nil {
		p.None = "no plan: no step held the objective"
		return p
	}
	p.knee, p.Lower, p.starved = ss.KneeRate, !ss.Saturated, ss.Starved != ""
	p.Units = int(math.Ceil(r / (p.knee * Utilisation)))
	unit := r / float64(p.Units)
	p.fit = FitCost(ss.Steps, ClientCost)
	p.clientUs = p.fit.UsPerOpAt(unit)
	p.ClientCPU = float64(p.Units) * p.fit.Cores(unit) / Utilisation
	if sf := FitCost(ss.Steps, BusiestCost); sf != nil {
		p.serverUs, p.nodeCPU = sf.UsPerOpAt(r), sf.Cores(r)
		// The fewest groups whose busiest node stays at Utilisation of a
		// core, each taking r/groups.
		g := math.Ceil(p.nodeCPU / Utilisation)
		if sf.FixedCores < Utilisation {
			g = math.Ceil(sf.UsPerOp * r / 1e6 / (Utilisation - sf.FixedCores))
		}
		p.Groups = max(1, int(g))
	}
	if nodeCap > 0 {
		// A planted cap is a node's limit whatever its CPU: 2 commands per
		// lock operation.
		p.Groups = max(p.Groups, int(math.Ceil(r/(nodeCap/2*Utilisation))))
	}
	return p
}

func provisionAll(rep *SweepReport) []Provision {
	var out []Provision
	for _, ss := range rep.Strategies {
		out = append(out, ProvisionFor(ss, rep.Config.CapacityRate, rep.Config.NodeCap))
	}
	return out
}

// WriteProvisioning writes the Provisioning section: what -capacity-rate
// takes in client and server cores, from the costs measured at the knee.
func WriteProvisioning(w io.Writer, rep *SweepReport) {
	c := rep.Config
	fmt.Fprintln(w, "## Provisioning")
	fmt.Fprintln(w)
	if c.CapacityRate <= 0 {
		fmt.Fprintln(w, "Give `-capacity-rate OPS` to size a target rate: client cores, per-node server cores, client processes and Redlock groups, from the costs measured at the knee.")
		fmt.Fprintln(w)
		return
	}
	r := c.CapacityRate
	nodes := len(c.Nodes)
	fmt.Fprintf(w, "For **%s lock operations/s** (-capacity-rate), from the CPU costs fitted over the steps that held (below). A *unit* is what the sweep measured: one client process of %d workers and one %d-node Redlock group; units run at %.0f%% of the knee, keys spread over their groups.\n\n", format.Count(r), c.Workers, nodes, Utilisation*100)
	t := NewTable("strategy", "knee ops/s", "units", "client CPU us/op at a unit's rate", "client cores in all", "server CPU us/op (busiest node)", "server cores per node, one group", "groups by server CPU alone", "bound by")
	for i, p := range provisionAll(rep) {
		ss := rep.Strategies[i]
		if p.None != "" {
			t.Row(p.name, "none", "-", "-", "-", "-", "-", "-", p.None)
			continue
		}
		knee := format.Count(p.knee)
		if p.Lower {
			knee = "> " + knee
		}
		srv, cores, groups := "-", "-", "-"
		if p.serverUs > 0 {
			srv, cores = p.atMost(fmt.Sprintf("%.1f", p.serverUs)), p.atMost(fmt.Sprintf("%.2f", p.nodeCPU))
		}
		if p.Groups > 0 {
			groups = p.atMost(fmt.Sprint(p.Groups))
		}
		bound := ss.Bound
		if bound == "" {
			bound = "not reached: upper bounds (the sweep never approached its knee; costs per operation fall as the rate rises)"
		}
		t.Row(p.name, knee, p.atMost(fmt.Sprint(p.Units)), p.atMost(fmt.Sprintf("%.1f", p.clientUs)), p.atMost(fmt.Sprintf("%.2f", p.ClientCPU)), srv, cores, groups, bound)
	}
	t.Markdown(w)
	fmt.Fprintln(w)
	fmt.Fprintf(w, "How to read it: the knee was bound by one side (the *bound by* column). Units scale both sides together and always suffice; when the client bound the knee, the servers need only the groups their CPU needs (the *groups by server CPU alone* column), and when a node bound it, client processes need only the client cores.\n\n")
	WriteCostFits(w, rep)
	fmt.Fprintf(w, "Assumptions: (1) CPU grows with the rate as fitted over the steps that held (cores = fixed + per-operation cost x rate, least squares: the cost per operation falls as the rate rises, so each unit's cost is taken at the unit's own rate, and a node's at the rate its group takes), the same when the load is spread over more processes and groups; a sweep that never reached its knee plans more units, each at a lower rate, so its figures are upper bounds (marked \"at most\"); and the knee's latency holds only on a network like this one (%s); (2) client cores are planned %.0f%% busy (cores in all = units x the fitted client cores at a unit's rate / %.1f); (3) a Redis node executes commands on one core, so no node is planned above %.0f%% of a core: above that, keys are spread over more Redlock groups of %d nodes (every node of a group sees every operation: more nodes per group add safety, not capacity), and each group needs %d nodes' cores; (4) the client figure is this process's CPU (getrusage) and includes histogram recording; the server figure is %s.",
		c.Target, Utilisation*100, Utilisation, Utilisation*100, nodes, nodes, serverFigure(rep))
	if c.NodeCap > 0 {
		fmt.Fprintf(w, " A planted -node-cap (%g commands/s, %g lock ops/s per node) limits groups whatever their CPU.", c.NodeCap, c.NodeCap/2)
	}
	if rep.Env.NumCPU > 0 && !strings.Contains(c.Target, "given with -nodes") {
		fmt.Fprintf(w, " Here the client and the servers shared %d logical CPUs: a machine per role gives each its own.", rep.Env.NumCPU)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w)
}

// WriteCostFits says what each strategy's fitted costs are and which steps
// they come from.
func WriteCostFits(w io.Writer, rep *SweepReport) {
	for _, ss := range rep.Strategies {
		cf, sf := FitCost(ss.Steps, ClientCost), FitCost(ss.Steps, BusiestCost)
		if cf == nil {
			continue
		}
		fmt.Fprintf(w, "%s: client CPU %.3f cores fixed + %.1f us per operation, fitted over %d step(s) that held (%s-%s ops/s)", ss.Name, cf.FixedCores, cf.UsPerOp, cf.Steps, format.Count(cf.MinRate), format.Count(cf.MaxRate))
		if sf != nil {
			fmt.Fprintf(w, "; busiest node %.3f cores fixed + %.1f us per operation", sf.FixedCores, sf.UsPerOp)
		}
		if c := cf.Caveat(); c != "" {
			fmt.Fprintf(w, ". **%s**", c)
		}
		fmt.Fprintln(w, ".")
		fmt.Fprintln(w)
	}
}

// serverFigure says where the server CPU figures came from.
func serverFigure(rep *SweepReport) string {
	for _, ss := range rep.Strategies {
		for _, st := range ss.Steps {
			switch st.ServerCPUSource {
			case "info":
				return "each node's INFO CPU (used_cpu_user + used_cpu_sys: command execution and network I/O)"
			case "process":
				return "the server processes' CPU (/proc; an embedded cluster's nodes share one process, so this is their mean)"
			}
		}
	}
	return "unknown here (no node reported INFO CPU): server cores are not sized"
}

// WriteHeadroom writes what the knee means for a target rate.
func WriteHeadroom(w io.Writer, rep *SweepReport) {
	c := rep.Config
	n := len(c.Nodes)
	rates := []float64{}
	if c.CapacityRate > 0 {
		rates = append(rates, c.CapacityRate)
	}
	fmt.Fprintln(w, "### Headroom")
	fmt.Fprintln(w)
	planned := false
	for _, ss := range rep.Strategies {
		planned = planned || ss.Knee != nil && ss.Saturated
	}
	if !planned {
		// No all-dash table, and no plan stated that is not made.
		fmt.Fprintf(w, "No strategy reached a knee (none saturated, or none held): there is no capacity to plan at %.0f%% of.", Utilisation*100)
		if len(rates) > 0 {
			fmt.Fprint(w, " The Provisioning section's upper bounds stand.")
		} else {
			fmt.Fprint(w, " Sweep to higher rates to find it.")
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w)
		return
	}
	fmt.Fprintf(w, "Planning at %.0f%% of the knee. One client process with these settings and one %d-node Redlock group carry the planned rate.", Utilisation*100, n)
	if len(rates) == 0 {
		fmt.Fprintln(w, " Give -capacity-rate to size a target.")
		fmt.Fprintln(w)
	} else {
		fmt.Fprintln(w)
		fmt.Fprintln(w)
	}
	head := []string{"strategy", "planned ops/s (70% of knee)"}
	for _, r := range rates {
		head = append(head, "headroom at "+format.Count(r)+" ops/s")
	}
	t := NewTable(head...)
	for _, ss := range rep.Strategies {
		if ss.Knee == nil || !ss.Saturated {
			row := []string{ss.Name, "-"}
			for range rates {
				row = append(row, "-")
			}
			t.Row(row...)
			continue
		}
		plan := ss.KneeRate * Utilisation
		row := []string{ss.Name, format.Count(plan)}
		for _, r := range rates {
			row = append(row, fmt.Sprintf("%.2fx", ss.KneeRate/r))
		}
		t.Row(row...)
	}
	t.Markdown(w)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Headroom is the knee over the target (below 1: the target is past capacity; the Provisioning section says what to add). A strategy that never saturated has no knee to plan with: its capacity is above the highest rate tried.")
	fmt.Fprintln(w)
}

// sweepPlotTitle is the sweep plot's title and subtitle.
func sweepPlotTitle(rep *SweepReport) (string, string) {
	c := rep.Config
	sub := c.Target
	if c.LatencyMs > 0 {
		sub += fmt.Sprintf("; +%gms reply latency", c.LatencyMs)
	}
	if c.NodeCap > 0 {
		sub += fmt.Sprintf("; node cap %g commands/s", c.NodeCap)
	}
	sub += fmt.Sprintf("; workload %s, %d workers (-c); %gs steps", c.Workload, c.Workers, c.DurationS)
	if rep.Interrupted {
		sub += "; INTERRUPTED"
	}
	title := "Latency against throughput (open-loop steps)"
	if c.Title != "" {
		title = c.Title
	}
	return title, sub
}

// WriteSweepPlot draws sweep.svg: latency against achieved throughput, per
// strategy (bench/internal/plot draws it).
func WriteSweepPlot(w io.Writer, rep *SweepReport) error {
	s := plot.Sweep{MaxFailedShare: MaxFailedShare}
	for _, ss := range rep.Strategies {
		ps := plot.SweepSeries{Name: ss.Name, SLOPct: ss.SLOPct, SLOBudgetUs: ss.SLOBudgetUs, Capacity: "capacity " + kneeCell(ss) + " ops/s"}
		if ss.Knee == nil {
			ps.Capacity = "no step held"
		}
		// The report's caveats, in short.
		if rep.Config.CapacityRate > 0 && ss.Knee != nil && (!ss.Saturated || ss.Starved != "") {
			ps.Caveats = append(ps.Caveats, "plan figures: at most")
		}
		if ss.Starved != "" {
			ps.Caveats = append(ps.Caveats, "CPU-starved machine")
		}
		if c := FitCost(ss.Steps, ClientCost).PlotCaveat(); c != "" {
			ps.Caveats = append(ps.Caveats, c)
		}
		for _, st := range ss.Steps {
			ps.Steps = append(ps.Steps, sweepPlotStep(st))
		}
		if ss.Knee != nil && ss.Saturated {
			k := sweepPlotStep(ss.Knee)
			ps.Knee = &k
		}
		s.Strategies = append(s.Strategies, ps)
	}
	title, sub := sweepPlotTitle(rep)
	return plot.WriteSweep(w, title, sub, s)
}

// sweepPlotStep is what the sweep plot draws of st.
func sweepPlotStep(st *SweepStep) plot.SweepStep {
	return plot.SweepStep{TargetRate: st.TargetRate, OpsPerSec: st.OpsPerSec, Ops: st.Ops, Repeated: st.Repeated, SLOUs: st.SLOUs, P50Us: st.Latency.P50Us,
		Held: st.Held, Saturated: st.Saturated, FailedShare: st.FailedShare}
}
