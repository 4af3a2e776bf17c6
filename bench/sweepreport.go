package bench

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// Files written in a sweep's -out directory.
const (
	FileSweepReport = "sweep.md"
	FileSweepJSON   = "sweep.json"
	FileSweepCSV    = "sweep.csv"
	FileSweepPlot   = "sweep.svg"
	FileSweepHlog   = "sweep.hlog"
)

func numCPU() int { return runtime.NumCPU() }

func kneeCell(ss *SweepStrategy) string {
	switch {
	case ss.Knee == nil:
		return "none (no step held)"
	case !ss.Saturated:
		return "> " + fmtCount(ss.KneeRate)
	}
	return fmtCount(ss.KneeRate)
}

// WriteSweepTable prints the steps and knees for a terminal.
func WriteSweepTable(w io.Writer, rep *SweepReport) {
	c := rep.Config
	fmt.Fprintf(w, "%s; sweep of %s, %d workers, workload %s, keys %d, %gs steps\n", c.Target, strings.Join(c.Strategies, "/"), c.Workers, c.Workload, c.Keys, c.DurationS)
	t := newTable("strategy", "target/s", "ops/s", "p50", "p99", "p99.9", "objective", "failed", "verdict")
	for _, ss := range rep.Strategies {
		for _, st := range ss.Steps {
			verdict := "held"
			if !st.Held {
				verdict = st.Why
			}
			if st.Repeated {
				verdict += " (run again)"
			}
			t.row(ss.Name, fmtCount(st.TargetRate), fmtCount(st.OpsPerSec), fmtUs(st.Latency.P50Us), fmtUs(st.Latency.P99Us),
				fmtUs(st.Latency.P999Us), pctName(ss.SLOPct)+" "+fmtUs(st.SLOUs), fmt.Sprintf("%.2f%%", 100*st.FailedShare), verdict)
		}
	}
	t.write(w)
	for _, ss := range rep.Strategies {
		fmt.Fprintf(w, "%s: capacity %s ops/s under %s", ss.Name, kneeCell(ss), ss.SLO)
		if ss.Bound != "" {
			fmt.Fprintf(w, "; bound by %s", ss.Bound)
		}
		fmt.Fprintln(w)
	}
	if rep.Interrupted {
		fmt.Fprintln(w, "warning: interrupted: the report covers the steps measured")
	}
}

// WriteSweepCSV writes one row per strategy and step.
func WriteSweepCSV(w io.Writer, rep *SweepReport) error {
	cw := csv.NewWriter(w)
	pcts := reportPercentiles(rep.Config)
	head := []string{"strategy", "target_rate", "ops_per_sec", "ops", "saturated", "failed", "failed_share", "held", "knee", "refinement", "repeated", "slo", "slo_us", "min_us", "mean_us"}
	for _, p := range pcts {
		head = append(head, pctName(p)+"_us")
	}
	head = append(head, "max_us", "client_cpu_us_per_op", "server_cpu_us_per_op_per_node", "why")
	if err := cw.Write(head); err != nil {
		return err
	}
	g := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	for _, ss := range rep.Strategies {
		for _, st := range ss.Steps {
			l := st.Latency
			row := []string{ss.Name, g(st.TargetRate), g(st.OpsPerSec), fmt.Sprint(st.Ops), strconv.FormatBool(st.Saturated), fmt.Sprint(st.Failed),
				g(st.FailedShare), strconv.FormatBool(st.Held), strconv.FormatBool(st == ss.Knee), strconv.FormatBool(st.Refinement), strconv.FormatBool(st.Repeated),
				pctName(ss.SLOPct) + "<" + g(ss.SLOBudgetUs) + "us", g(st.SLOUs), g(l.MinUs), g(l.MeanUs)}
			for _, p := range pcts {
				v, _ := l.At(p)
				row = append(row, g(v))
			}
			row = append(row, g(l.MaxUs), g(st.ClientCPUUsPerOp), g(st.ServerCPUUsPerOpPerNode), st.Why)
			if err := cw.Write(row); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteSweepJSON writes sweep.json.
func WriteSweepJSON(w io.Writer, rep *SweepReport) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

func writeSweepOutputs(cfg *Config, rep *SweepReport, stdout io.Writer) error {
	if cfg.JSON != "" {
		if err := writeTo(cfg.JSON, stdout, func(w io.Writer) error { return WriteSweepJSON(w, rep) }); err != nil {
			return err
		}
	}
	if cfg.CSV != "" {
		if err := writeTo(cfg.CSV, stdout, func(w io.Writer) error { return WriteSweepCSV(w, rep) }); err != nil {
			return err
		}
	}
	if cfg.Out == "" {
		return nil
	}
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return err
	}
	for _, f := range []struct {
		name  string
		write func(io.Writer) error
	}{
		{FileSweepJSON, func(w io.Writer) error { return WriteSweepJSON(w, rep) }},
		{FileSweepCSV, func(w io.Writer) error { return WriteSweepCSV(w, rep) }},
		{FileSweepHlog, writeBytes(rep.hlog)},
		{FileSweepPlot, func(w io.Writer) error { return WriteSweepPlot(w, rep) }},
		{FileSweepReport, func(w io.Writer) error { return WriteSweepMarkdown(w, rep) }},
	} {
		if err := writeFile(filepath.Join(cfg.Out, f.name), f.write); err != nil {
			return err
		}
	}
	return nil
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
	fmt.Fprintf(w, "A step holds when it keeps up with its rate (achieved at least %.0f%% of the target, no growing backlog), at most %g%% of its operations fail, and the objective's percentile of every operation's latency (from its intended start to its end; failures count at their latency to failure) is within the objective. The capacity (the knee) is the highest rate that held with every lighter step holding too.\n\n", SaturationShare*100, SweepMaxFailedShare*100)
	kt := newTable("strategy", "capacity ops/s", "objective", "at the knee: p50", "p99", "p99.9", "client CPU us/op", "server CPU us/op/node", "client cores", "server cores/node", "bound by")
	for _, ss := range rep.Strategies {
		k := ss.Knee
		if k == nil {
			kt.row(ss.Name, kneeCell(ss), ss.SLO, "-", "-", "-", "-", "-", "-", "-", "-")
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
		kt.row(ss.Name, kneeCell(ss), ss.SLO, fmtUs(k.Latency.P50Us), fmtUs(k.Latency.P99Us), fmtUs(k.Latency.P999Us),
			fmt.Sprintf("%.1f", k.ClientCPUUsPerOp), srv, fmt.Sprintf("%.2f", ss.KneeRate*k.ClientCPUUsPerOp/1e6), srvCores, bound)
	}
	kt.markdown(w)
	fmt.Fprintln(w)
	fmt.Fprintf(w, "![latency against throughput](%s)\n\n", FileSweepPlot)
	writeHeadroom(w, rep)

	fmt.Fprintln(w, "## Steps")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Latency of every operation (us/ms). Refinement steps bisect the interval between the last coarse step that held and the first that did not. A step that missed only the latency objective (it kept up, nothing failed) was run again at once and the second run's verdict stands: a lone latency spike on a shared machine is not a knee, an overload repeats. Both runs are listed; the plot shows the second.")
	fmt.Fprintln(w)
	pcts := reportPercentiles(c)
	head := []string{"strategy", "target ops/s", "achieved", "ops"}
	for _, p := range pcts {
		head = append(head, pctName(p))
	}
	head = append(head, "max", "failed", "client CPU us/op", "server CPU us/op/node", "verdict")
	t := newTable(head...)
	for _, ss := range rep.Strategies {
		for _, st := range ss.Steps {
			row := []string{ss.Name, fmtCount(st.TargetRate), fmtCount(st.OpsPerSec), fmt.Sprint(st.Ops)}
			for _, p := range pcts {
				v, _ := st.Latency.At(p)
				row = append(row, fmtUs(v))
			}
			srv := "-"
			if st.ServerCPUUsPerOpPerNode > 0 {
				srv = fmt.Sprintf("%.1f", st.ServerCPUUsPerOpPerNode)
			}
			verdict := "held"
			if !st.Held {
				verdict = st.Why
			}
			if st == ss.Knee {
				verdict = "**knee**"
			}
			if st.Refinement {
				verdict += " (refinement)"
			}
			if st.Repeated {
				verdict += " (run again)"
			}
			row = append(row, fmtUs(st.Latency.MaxUs), fmt.Sprintf("%d (%.2f%%)", st.Failed, 100*st.FailedShare),
				fmt.Sprintf("%.1f", st.ClientCPUUsPerOp), srv, verdict)
			t.row(row...)
		}
	}
	t.markdown(w)
	fmt.Fprintln(w)
	for _, ss := range rep.Strategies {
		if ss.ProbeOpsPerSec > 0 {
			fmt.Fprintf(w, "%s: steps spaced up to the closed-loop probe's %s ops/s (%d workers as fast as they go).\n", ss.Name, fmtCount(ss.ProbeOpsPerSec), c.Workers)
		}
	}
	fmt.Fprintln(w)

	fmt.Fprintln(w, "## Configuration and environment")
	fmt.Fprintln(w)
	ct := newTable("setting", "value")
	ct.row("nodes", fmt.Sprintf("%d (%s)", len(c.Nodes), strings.Join(c.Nodes, ", ")))
	ct.row("workers (-c)", fmt.Sprint(c.Workers))
	ct.row("ttl, per-node timeout", fmt.Sprintf("%dms, %gms", c.TTLMs, c.TimeoutMs))
	if c.LatencyMs > 0 {
		ct.row("added reply latency (-latency)", fmt.Sprintf("%gms on every node", c.LatencyMs))
	}
	if c.NodeCap > 0 {
		ct.row("node throughput cap (-node-cap)", fmt.Sprintf("%g commands/s per node", c.NodeCap))
	}
	if len(c.Faults) > 0 {
		ct.row("faults (-fault)", strings.Join(c.Faults, ", "))
	}
	ct.row("time (UTC)", e.Time)
	ct.row("go", e.GoVersion+" "+e.OS+"/"+e.Arch)
	ct.row("cpu", fmt.Sprintf("%s; %d logical CPUs, GOMAXPROCS %d", e.CPU, e.NumCPU, e.GOMAXPROCS))
	if e.Revision != "" {
		ct.row("revision", e.Revision)
	}
	ct.row("server", e.Server)
	ct.row("server CPU measured with", e.ServerCPU)
	if e.LoadAvgStart != "" {
		ct.row("load average (1 min) at start, end", e.LoadAvgStart+", "+e.LoadAvgEnd+fmt.Sprintf(" (on %d logical CPUs; this benchmark's own processes included)", e.NumCPU))
	}
	ct.markdown(w)
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Files: [%s](%s), [%s](%s) (one row per strategy and step), [%s](%s) (HdrHistogram interval log, ns, tags `<strategy>.r<rate>.<metric>` and `<strategy>.probe.<metric>`), [%s](%s).\n",
		FileSweepJSON, FileSweepJSON, FileSweepCSV, FileSweepCSV, FileSweepHlog, FileSweepHlog, FileSweepPlot, FileSweepPlot)
	return nil
}

// writeHeadroom writes what the knee means for a target rate.
func writeHeadroom(w io.Writer, rep *SweepReport) {
	c := rep.Config
	n := len(c.Nodes)
	rates := []float64{}
	if c.CapacityRate > 0 {
		rates = append(rates, c.CapacityRate)
	}
	fmt.Fprintln(w, "### Headroom")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Planning at %.0f%% of the knee. One client process with these settings and one %d-node Redlock group carry the planned rate; every node of a group sees every operation, so more nodes per group add safety, not capacity: a higher rate needs more groups (keys spread over them) or more client processes, whichever bound the knee.", Utilisation*100, n)
	if len(rates) == 0 {
		fmt.Fprintln(w, " Give -capacity-rate to size a target.")
		fmt.Fprintln(w)
	} else {
		fmt.Fprintln(w)
		fmt.Fprintln(w)
	}
	head := []string{"strategy", "planned ops/s (70% of knee)"}
	for _, r := range rates {
		head = append(head, "headroom at "+fmtCount(r)+" ops/s", "units for "+fmtCount(r)+" ops/s")
	}
	t := newTable(head...)
	for _, ss := range rep.Strategies {
		if ss.Knee == nil || !ss.Saturated {
			row := []string{ss.Name, "-"}
			for range rates {
				row = append(row, "-", "-")
			}
			t.row(row...)
			continue
		}
		plan := ss.KneeRate * Utilisation
		row := []string{ss.Name, fmtCount(plan)}
		for _, r := range rates {
			row = append(row, fmt.Sprintf("%.2fx", ss.KneeRate/r), fmt.Sprint(int(math.Ceil(r/plan))))
		}
		t.row(row...)
	}
	t.markdown(w)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Headroom is the knee over the target (below 1: the target is past capacity). Units are client processes or groups, as the \"bound by\" column says. A strategy that never saturated has no knee to plan with: its capacity is above the highest rate tried.")
	fmt.Fprintln(w)
}

// sweepPctSeries is the percentile each strategy is drawn at besides p50.
func sweepPlotTitle(rep *SweepReport) (string, string) {
	c := rep.Config
	sub := c.Target
	if c.LatencyMs > 0 {
		sub += fmt.Sprintf("; +%gms reply latency", c.LatencyMs)
	}
	if c.NodeCap > 0 {
		sub += fmt.Sprintf("; node cap %g commands/s", c.NodeCap)
	}
	sub += fmt.Sprintf("; %d workers; %gs steps", c.Workers, c.DurationS)
	if rep.Interrupted {
		sub += "; INTERRUPTED"
	}
	title := "Latency against throughput (open-loop steps)"
	if c.Title != "" {
		title = c.Title
	}
	return title, sub
}

// WriteSweepPlot draws latency (log y) against achieved throughput (x),
// per strategy: the objective's percentile solid, p50 dashed; a hollow
// marker for a step that did not hold; a ring on the knee; the objective
// as a dotted line when every strategy has the same.
func WriteSweepPlot(w io.Writer, rep *SweepReport) error {
	const (
		W, H                  = 860, 520
		left, right, top, bot = 80, 210, 62, 70
	)
	pw, ph := float64(W-left-right), float64(H-top-bot)
	xMax, lo, hi := 0.0, math.Inf(1), math.Inf(-1)
	for _, ss := range rep.Strategies {
		for _, st := range ss.Steps {
			xMax = math.Max(xMax, math.Max(st.OpsPerSec, st.TargetRate))
			for _, v := range []float64{st.Latency.P50Us, st.SLOUs} {
				if v > 0 {
					lo, hi = math.Min(lo, v), math.Max(hi, v)
				}
			}
		}
		if ss.SLOBudgetUs > 0 {
			hi = math.Max(hi, ss.SLOBudgetUs)
			lo = math.Min(lo, ss.SLOBudgetUs)
		}
	}
	if math.IsInf(lo, 1) {
		lo, hi = 100, 1000
	}
	xStep := niceCeil(math.Max(xMax, 1) * 1.05 / 6)
	xMax = math.Ceil(math.Max(xMax, 1)*1.05/xStep) * xStep
	yLo := math.Floor(math.Log10(math.Max(lo, 1)))
	yHi := math.Ceil(math.Log10(math.Max(hi, lo*1.01)))
	if yHi-yLo < 1 {
		yHi = yLo + 1
	}
	px := func(x float64) float64 { return float64(left) + x/xMax*pw }
	py := func(usv float64) float64 {
		v := math.Log10(math.Max(usv, 1e-3))
		v = math.Min(math.Max(v, yLo), yHi)
		return float64(top) + ph - (v-yLo)/(yHi-yLo)*ph
	}
	title, sub := sweepPlotTitle(rep)
	var b strings.Builder
	svgOpen(&b, W, H, left, title, sub)
	for d := yLo; d <= yHi; d++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, d)
			if math.Log10(v) > yHi+1e-9 {
				break
			}
			y := py(v)
			stroke, size, fill := "#cccccc", "12", "#000"
			if m != 1 {
				stroke, size, fill = "#eeeeee", "10", "#888"
			}
			fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", left, y, px(xMax), y, stroke)
			fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" font-size="%s" fill="%s">%s</text>`+"\n", left-8, y+4, size, fill, durLabel(v*1e3))
		}
	}
	for x := 0.0; x <= xMax+1e-9; x += xStep {
		X := px(x)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="#cccccc"/>`+"\n", X, top, X, float64(top)+ph)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", X, float64(top)+ph+18, fmtCount(x))
	}
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%.1f" fill="none" stroke="#333"/>`+"\n", left, top, pw, ph)
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">achieved throughput (lock operations/s)</text>`+"\n", float64(left)+pw/2, H-22)
	fmt.Fprintf(&b, `<text transform="translate(20 %.1f) rotate(-90)" text-anchor="middle">latency of every operation (log scale)</text>`+"\n", float64(top)+ph/2)

	same := len(rep.Strategies) > 0
	for _, ss := range rep.Strategies {
		same = same && ss.SLOBudgetUs == rep.Strategies[0].SLOBudgetUs && ss.SLOPct == rep.Strategies[0].SLOPct
	}
	ly := float64(top) + 14
	lx := float64(W-right) + 16
	if same {
		y := py(rep.Strategies[0].SLOBudgetUs)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#000" stroke-dasharray="1,3" stroke-width="1.5"/>`+"\n", left, y, px(xMax), y)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end" font-size="10">objective %s</text>`+"\n", px(xMax)-4, y-4,
			html.EscapeString(pctName(rep.Strategies[0].SLOPct)+" < "+fmtUs(rep.Strategies[0].SLOBudgetUs)))
	}
	for i, ss := range rep.Strategies {
		color := plotColors[ss.Name]
		if color == "" {
			color = plotSpare[i%len(plotSpare)]
		}
		var pSLO, p50 []string
		for _, st := range ss.Steps {
			if st.Ops == 0 || st.Repeated {
				continue
			}
			pSLO = append(pSLO, fmt.Sprintf("%.1f,%.1f", px(st.OpsPerSec), py(st.SLOUs)))
			p50 = append(p50, fmt.Sprintf("%.1f,%.1f", px(st.OpsPerSec), py(st.Latency.P50Us)))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" stroke-linejoin="round" points="%s"/>`+"\n", color, strings.Join(pSLO, " "))
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5" stroke-dasharray="5,4" points="%s"/>`+"\n", color, strings.Join(p50, " "))
		for _, st := range ss.Steps {
			if st.Ops == 0 || st.Repeated {
				continue
			}
			fill := color
			if !st.Held {
				fill = "#ffffff"
			}
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s" stroke="%s" stroke-width="1.5"/>`+"\n", px(st.OpsPerSec), py(st.SLOUs), fill, color)
		}
		if k := ss.Knee; k != nil && ss.Saturated {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="8" fill="none" stroke="%s" stroke-width="2"/>`+"\n", px(k.OpsPerSec), py(k.SLOUs), color)
		}
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="3"/>`+"\n", lx, ly, lx+26, ly, color)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-weight="bold">%s</text>`+"\n", lx+32, ly+4, html.EscapeString(ss.Name))
		capText := "capacity " + kneeCell(ss) + " ops/s"
		if ss.Knee == nil {
			capText = "no step held"
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" fill="#555">%s</text>`+"\n", lx+32, ly+18, html.EscapeString(capText))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" fill="#555">solid %s, dashed p50</text>`+"\n", lx+32, ly+31, pctName(ss.SLOPct))
		if !same {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" fill="#555">objective &lt; %s</text>`+"\n", lx+32, ly+44, fmtUs(ss.SLOBudgetUs))
			ly += 13
		}
		ly += 50
	}
	fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="#888" stroke="#888"/>`+"\n", lx+6, ly)
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" fill="#555">step held</text>`+"\n", lx+16, ly+4)
	fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="#fff" stroke="#888" stroke-width="1.5"/>`+"\n", lx+6, ly+16)
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" fill="#555">did not hold</text>`+"\n", lx+16, ly+20)
	fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="7" fill="none" stroke="#888" stroke-width="2"/>`+"\n", lx+6, ly+36)
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" fill="#555">knee (capacity)</text>`+"\n", lx+16, ly+40)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*e >= v-1e-9 {
			return m * e
		}
	}
	return 10 * e
}
