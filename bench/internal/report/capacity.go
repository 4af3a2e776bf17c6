package report

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/redmux/redmux/bench/internal/format"
)

// Utilisation is the share of a sweep's knee a capacity plan allows itself
// to use (the headroom table of sweep.md).
const Utilisation = 0.7

// capacityFigures is the capacity estimate of one strategy.
type capacityFigures struct {
	Strategy string
	// ClientOpsPerCore is lock operations per second one client core can
	// drive (1e6 / client CPU us per op); 0 when CPU was not measured.
	ClientOpsPerCore float64
	// NodeOpsPerS is lock operations per second one node (one core) can
	// serve; NodeSource says how it was derived.
	NodeOpsPerS float64
	NodeSource  string
	// MeanLatencyS is the mean acquire+release (acquire when none) latency.
	MeanLatencyS float64
}

// ErrNotSteady is returned by EstimateCapacity for a result that cannot be
// extrapolated: an open-loop run that did not keep up with its target
// (its latencies are queueing time) or one where most operations failed.
var ErrNotSteady = errors.New("result not usable for capacity planning")

// EstimateCapacity derives per-core and per-node capacity from a result. It
// refuses (ErrNotSteady) a saturated open-loop result and one where most
// operations failed: Little's law and per-operation costs only hold for a
// system that keeps up.
func EstimateCapacity(s *StrategyResult) (capacityFigures, error) {
	c := capacityFigures{Strategy: s.Name}
	switch {
	case s.Saturated:
		return c, fmt.Errorf("%w: %s is saturated (%s)", ErrNotSteady, s.Name, s.Saturation)
	case s.Ops == 0:
		return c, fmt.Errorf("%w: %s measured no operations", ErrNotSteady, s.Name)
	case s.FailedShare() > 0.5:
		return c, fmt.Errorf("%w: %s: %d of %d operations failed", ErrNotSteady, s.Name, s.Failed, s.Ops)
	}
	if s.CPUUsPerOp > 0 {
		c.ClientOpsPerCore = 1e6 / s.CPUUsPerOp
	}
	if sv := s.Server; sv != nil && s.Ops > 0 {
		switch {
		case sv.CPUUsPerOpPerNode > 0:
			c.NodeOpsPerS = 1e6 / sv.CPUUsPerOpPerNode
			c.NodeSource = "server process CPU"
		case sv.NodesReporting > 0 && sv.SetCalls > 0:
			usPerOp := (sv.SetUsecPerCall*float64(sv.SetCalls) + sv.EvalshaUsecPerCall*float64(sv.EvalshaCalls)) / float64(s.Ops) / float64(sv.NodesReporting)
			if usPerOp > 0 {
				c.NodeOpsPerS = 1e6 / usPerOp
				c.NodeSource = "commandstats (execution only: an upper bound)"
			}
		}
	}
	l := s.AcquireRelease
	if l.Count == 0 {
		l = s.Acquire
	}
	c.MeanLatencyS = l.MeanUs / 1e6
	return c, nil
}

func WriteCapacity(w io.Writer, rep *Report) {
	fmt.Fprintln(w, "## Capacity")
	fmt.Fprintln(w)
	t := NewTable("strategy", "measured ops/s", "client ops/s per core", "node ops/s (one core)", "node figure from", "mean latency")
	var refused []string
	for _, s := range rep.Strategies {
		c, err := EstimateCapacity(s)
		if err != nil {
			refused = append(refused, strings.TrimPrefix(err.Error(), ErrNotSteady.Error()+": "))
			t.Row(s.Name, format.Count(s.OpsPerSec), "-", "-", "not estimated", "-")
			continue
		}
		node, src := "-", "-"
		if c.NodeOpsPerS > 0 {
			node, src = format.Count(c.NodeOpsPerS), c.NodeSource
		}
		core := "-"
		if c.ClientOpsPerCore > 0 {
			core = format.Count(c.ClientOpsPerCore)
		}
		t.Row(s.Name, format.Count(s.OpsPerSec), core, node, src, format.Us(c.MeanLatencyS*1e6))
	}
	t.Markdown(w)
	fmt.Fprintln(w)
	for _, r := range refused {
		fmt.Fprintf(w, "Not estimated: %s. Capacity is only derived from runs that keep up with their load; lower -rate, or find the knee with `redmux-bench sweep`.\n\n", r)
	}
	fmt.Fprintf(w, "These are one run's costs per operation, at this run's load; they do not say how far the rate can rise before latency breaks (queueing is not linear), so this report no longer extrapolates a capacity from them. For capacity, run the same target under `redmux-bench sweep` (open-loop steps of rising rate up to saturation; the highest rate that holds a latency objective, with server CPU per operation and headroom for a target rate).\n\n")
	fmt.Fprintf(w, "The client figure is this process's CPU per operation (getrusage), which includes histogram recording. Node figures from process CPU include network I/O; commandstats figures exclude it and overstate capacity (often by 2-4x). Every node of a Redlock group sees every operation: adding nodes to a group adds safety, not capacity. Target: %s.\n\n", rep.Config.Target)
}
