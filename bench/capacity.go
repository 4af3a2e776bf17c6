package bench

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
)

// Utilisation is the share of a core (client or server) the capacity plan
// allows itself to use.
const Utilisation = 0.7

// Capacity is the capacity estimate of one strategy.
type Capacity struct {
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

// Plan is what a target rate needs.
type Plan struct {
	Rate        float64
	ClientCores int // 0 = unknown
	Groups      int // independent N-node Redlock groups (0 = unknown)
	Nodes       int
	Concurrency int // operations in flight (Little's law)
}

// ErrNotSteady is returned by EstimateCapacity for a result that cannot be
// extrapolated: an open-loop run that did not keep up with its target
// (its latencies are queueing time) or one where most operations failed.
var ErrNotSteady = errors.New("bench: result not usable for capacity planning")

// EstimateCapacity derives per-core and per-node capacity from a result. It
// refuses (ErrNotSteady) a saturated open-loop result and one where most
// operations failed: Little's law and per-operation costs only hold for a
// system that keeps up.
func EstimateCapacity(s *StrategyResult) (Capacity, error) {
	c := Capacity{Strategy: s.Name}
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

// PlanFor says what rate needs, for a cluster of n nodes per group.
func (c Capacity) PlanFor(rate float64, n int) Plan {
	p := Plan{Rate: rate}
	if c.ClientOpsPerCore > 0 {
		p.ClientCores = int(math.Ceil(rate / (c.ClientOpsPerCore * Utilisation)))
	}
	if c.NodeOpsPerS > 0 {
		p.Groups = int(math.Ceil(rate / (c.NodeOpsPerS * Utilisation)))
		p.Nodes = p.Groups * n
	}
	p.Concurrency = int(math.Ceil(rate * c.MeanLatencyS))
	return p
}

func capacityRates(rep *Report) []float64 {
	rates := []float64{1e3, 1e4, 1e5}
	if r := rep.Config.CapacityRate; r > 0 {
		rates = append(rates, r)
	}
	return rates
}

func writeCapacity(w io.Writer, rep *Report) {
	n := len(rep.Config.Nodes)
	fmt.Fprintln(w, "## Capacity")
	fmt.Fprintln(w)
	t := newTable("strategy", "measured ops/s", "client ops/s per core", "node ops/s (one core)", "node figure from", "mean latency")
	var caps []Capacity
	var refused []string
	for _, s := range rep.Strategies {
		c, err := EstimateCapacity(s)
		if err != nil {
			refused = append(refused, strings.TrimPrefix(err.Error(), ErrNotSteady.Error()+": "))
			t.row(s.Name, fmtCount(s.OpsPerSec), "-", "-", "not estimated", "-")
			continue
		}
		caps = append(caps, c)
		node, src := "-", "-"
		if c.NodeOpsPerS > 0 {
			node, src = fmtCount(c.NodeOpsPerS), c.NodeSource
		}
		core := "-"
		if c.ClientOpsPerCore > 0 {
			core = fmtCount(c.ClientOpsPerCore)
		}
		t.row(s.Name, fmtCount(s.OpsPerSec), core, node, src, fmtUs(c.MeanLatencyS*1e6))
	}
	t.markdown(w)
	fmt.Fprintln(w)
	for _, r := range refused {
		fmt.Fprintf(w, "Not estimated: %s. Capacity is only derived from runs that keep up with their load; lower -rate, or find the knee with `redmux-bench sweep`.\n\n", r)
	}
	if len(caps) == 0 {
		return
	}
	pt := newTable("strategy", "target ops/s", "client cores", "Redlock groups", "nodes", "ops in flight")
	for _, c := range caps {
		for _, r := range capacityRates(rep) {
			p := c.PlanFor(r, n)
			cores, groups, nodes := "?", "?", "?"
			if p.ClientCores > 0 {
				cores = fmt.Sprint(p.ClientCores)
			}
			if p.Groups > 0 {
				groups, nodes = fmt.Sprint(p.Groups), fmt.Sprint(p.Nodes)
			}
			pt.row(c.Strategy, fmtCount(r), cores, groups, nodes, fmt.Sprint(p.Concurrency))
		}
	}
	pt.markdown(w)
	fmt.Fprintln(w)
	fmt.Fprintf(w, `Assumptions: a lock operation is one acquire (SET NX PX on every node) plus one release (EVALSHA on every node); every node of a Redlock group sees every operation, so adding nodes to a group adds safety, not capacity — a higher rate needs more independent %d-node groups with the lock keys spread over them. Cores and nodes are planned at %.0f%% utilisation and scale linearly; Redis executes commands on one core per node. The client figure is this process's CPU per operation (getrusage), which includes histogram recording. Node figures from process CPU include network I/O; commandstats figures exclude it and overstate capacity (often by 2-4x). "Ops in flight" is Little's law with the mean latency measured here, at this run's load and network (%s): concurrency the clients need (workers) to sustain the rate; on a real network add the round-trip time.

`, n, Utilisation*100, rep.Config.Target)
}
