package report

import (
	"fmt"
	"math"

	"github.com/redmux/redmux/bench/internal/format"
)

// FitCost fits cores = fixed + usPerOp x rate / 1e6 over the steps that
// held (not run again, not interrupted, with a cost figure), by least
// squares on the achieved rates. A fit whose fixed part comes out negative
// (or whose slope does) is refitted through the origin: the mean cost per
// operation, weighted by rate. nil when no step qualifies.
func FitCost(steps []*SweepStep, cost func(*SweepStep) float64) *CostFit {
	var xs, ys []float64
	for _, st := range steps {
		if !st.Held || st.Repeated || st.Interrupted || st.OpsPerSec <= 0 || cost(st) <= 0 {
			continue
		}
		xs = append(xs, st.OpsPerSec)
		ys = append(ys, st.OpsPerSec*cost(st)/1e6)
	}
	if len(xs) == 0 {
		return nil
	}
	f := &CostFit{Steps: len(xs), MinRate: math.Inf(1)}
	var sx, sy, sxx, sxy float64
	for i, x := range xs {
		sx, sy, sxx, sxy = sx+x, sy+ys[i], sxx+x*x, sxy+x*ys[i]
		f.MinRate, f.MaxRate = math.Min(f.MinRate, x), math.Max(f.MaxRate, x)
	}
	n := float64(len(xs))
	if d := n*sxx - sx*sx; len(xs) >= 2 && d > 1e-9*sxx {
		a := (n*sxy - sx*sy) / d
		b := (sy - a*sx) / n
		if a > 0 && b >= 0 {
			f.UsPerOp, f.FixedCores = a*1e6, b
			return f
		}
	}
	f.UsPerOp = sxy / sxx * 1e6
	return f
}

// Cores is the fitted CPU at a rate (cores).
func (f *CostFit) Cores(rate float64) float64 {
	if f == nil {
		return 0
	}
	return f.FixedCores + f.UsPerOp*rate/1e6
}

// UsPerOpAt is the fitted CPU per operation at a rate.
func (f *CostFit) UsPerOpAt(rate float64) float64 {
	if f == nil || rate <= 0 {
		return 0
	}
	return f.Cores(rate) / rate * 1e6
}

// ClientCost and serverCost are the step figures the fits are over: the
// client's CPU per operation, and the busiest node's.
func ClientCost(st *SweepStep) float64 { return st.ClientCPUUsPerOp }
func BusiestCost(st *SweepStep) float64 {
	return max(st.ServerCPUMaxNodeUsPerOp, st.ServerCPUUsPerOpPerNode)
}

// minFitSteps is the fewest held steps a cost fit is taken as a fit over:
// through one step a line is not a fit (its cost per operation at one
// rate is taken for every rate), and through two nothing checks it.
const minFitSteps = 3

// Caveat says what a fit over fewer than minFitSteps steps is ("": a fit).
func (f *CostFit) Caveat() string {
	switch {
	case f == nil || f.Steps >= minFitSteps:
		return ""
	case f.Steps == 1:
		return fmt.Sprintf("NOT A FIT: one step held (%s ops/s), so its cost per operation is taken for every rate (fixed and per-operation costs not separated); sweep with at least %d steps below the knee for a fit", format.Count(f.MinRate), minFitSteps)
	}
	return fmt.Sprintf("a line through only %d steps (%s-%s ops/s), which nothing checks; sweep with at least %d steps below the knee for a fit", f.Steps, format.Count(f.MinRate), format.Count(f.MaxRate), minFitSteps)
}

// PlotCaveat is Caveat's short form for the sweep plot's legend.
func (f *CostFit) PlotCaveat() string {
	if f.Caveat() == "" {
		return ""
	}
	if f.Steps == 1 {
		return "cost: one step, not a fit"
	}
	return fmt.Sprintf("cost fit over %d steps only", f.Steps)
}
