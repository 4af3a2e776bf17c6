package bench

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/redmux/redmux/bench/internal/report"

	"github.com/stretchr/testify/require"
)

// Issue 36 item 2: provisioning from costs fitted over the steps that held.

// modelSteps makes held steps at rates whose client CPU per operation is
// 20us plus 0.05 cores spread over the rate (and a busiest node's 8us plus
// 0.02 cores), then one saturated step at failAt (0: none).
func modelSteps(rates []float64, failAt float64) *report.SweepStrategy {
	ss := &report.SweepStrategy{Name: "mux"}
	for _, r := range rates {
		ss.Steps = append(ss.Steps, &report.SweepStep{TargetRate: r, OpsPerSec: r, Held: true, Ops: int64(2 * r),
			ClientCPUUsPerOp: 20 + 0.05e6/r, ServerCPUUsPerOpPerNode: 8 + 0.02e6/r, ServerCPUMaxNodeUsPerOp: 8 + 0.02e6/r})
	}
	if failAt > 0 {
		ss.Steps = append(ss.Steps, &report.SweepStep{TargetRate: failAt, OpsPerSec: 0.8 * failAt, Saturated: true, Ops: 1, ClientCPUUsPerOp: 1})
	}
	ss.FindKnee()
	return ss
}

func TestFitCostOverHeldSteps(t *testing.T) {
	ss := modelSteps([]float64{1000, 2000, 4000, 8000, 16000}, 18000)
	f := report.FitCost(ss.Steps, report.ClientCost)
	require.Equal(t, 5, f.Steps, "the saturated step is not in the fit")
	require.InDelta(t, 0.05, f.FixedCores, 1e-9)
	require.InDelta(t, 20, f.UsPerOp, 1e-6)
	require.InDelta(t, 20+0.05e6/3000, f.UsPerOpAt(3000), 1e-6)
	s := report.FitCost(ss.Steps, report.BusiestCost)
	require.InDelta(t, 0.02, s.FixedCores, 1e-9)
	// Cost per operation rising with the rate (a negative fixed part):
	// through the origin instead.
	up := &report.SweepStrategy{Steps: []*report.SweepStep{{OpsPerSec: 1000, Held: true, ClientCPUUsPerOp: 10}, {OpsPerSec: 2000, Held: true, ClientCPUUsPerOp: 20}}}
	f = report.FitCost(up.Steps, report.ClientCost)
	require.Zero(t, f.FixedCores)
	require.InDelta(t, (1000*0.01+2000*0.04)/(1000*1000+2000*2000)*1e6, f.UsPerOp, 1e-6)
	require.Nil(t, report.FitCost([]*report.SweepStep{{OpsPerSec: 1, ClientCPUUsPerOp: 5}}, report.ClientCost), "no step held")
}

// A sweep stopped low and the full sweep of the same nodes plan client
// cores within 1.5x of each other, or the low one is marked an upper
// bound in every derived cell.
func TestProvisionLowSweepIsAnUpperBound(t *testing.T) {
	full := modelSteps([]float64{1000, 2000, 4000, 8000, 16000}, 18000)
	low := modelSteps([]float64{1000, 2000}, 0)
	require.True(t, full.Saturated)
	require.False(t, low.Saturated)
	const r = 50000
	pf, pl := report.ProvisionFor(full, r, 0), report.ProvisionFor(low, r, 0)
	require.False(t, pf.Lower)
	require.True(t, pl.Lower)
	require.GreaterOrEqual(t, pl.ClientCPU, pf.ClientCPU, "the low sweep's plan is an upper bound of the full one's")
	// Units scale with the fitted cost at each unit's rate.
	require.InDelta(t, float64(pf.Units)*(0.05+20e-6*r/float64(pf.Units))/report.Utilisation, pf.ClientCPU, 1e-9)
	if pl.ClientCPU > 1.5*pf.ClientCPU {
		line := pl.Line()
		require.Equal(t, 4, strings.Count(line, "at most "), line)
		require.Contains(t, line, "upper bounds")
		var w bytes.Buffer
		rep := &report.SweepReport{Strategies: []*report.SweepStrategy{low}, Config: report.ReportConfig{CapacityRate: r, Nodes: []string{"a", "b", "c"}, Workers: 64}}
		report.WriteProvisioning(&w, rep)
		var row string
		for _, l := range strings.Split(w.String(), "\n") {
			if strings.HasPrefix(l, "| mux") {
				row = l
			}
		}
		cells := strings.Split(strings.Trim(row, "| "), "|")
		require.Len(t, cells, 9, row)
		require.Contains(t, cells[1], "> 2000")
		for _, c := range cells[2:8] {
			require.Contains(t, c, "at most ", "every derived cell: %q", row)
		}
		require.Contains(t, cells[8], "upper bounds")
	}
	// The full sweep's plan is not marked.
	require.NotContains(t, pf.Line(), "at most")
}

// Issue 36 item 2: a CPU-starved machine is named before the objective is
// blamed, and a planted cap only when the steps broke near it.
func TestSweepBoundNamesStarvationAndCapOnlyNearIt(t *testing.T) {
	cfg := &Config{Workers: 64, Fake: 3}
	mk := func(knee, fail float64) *report.SweepStrategy {
		ss := &report.SweepStrategy{Steps: []*report.SweepStep{
			{TargetRate: knee, OpsPerSec: knee, Held: true, MeanServiceUs: 1000, ClientCPUUsPerOp: 10},
			{TargetRate: fail, OpsPerSec: fail, FailedShare: 0.15, Why: "15.0% of operations failed (over 1%)", MeanServiceUs: 2000},
		}}
		ss.FindKnee()
		return ss
	}
	ss := mk(1000, 2000)
	require.Contains(t, strategyBound(ss, cfg), "the latency objective itself", "a quiet machine")
	ss.Knee.LoadAvg = 6 * float64(numCPU())
	b := strategyBound(ss, cfg)
	require.True(t, strings.HasPrefix(b, "this machine's CPU, starved by other work"), b)
	require.Contains(t, b, fmt.Sprintf("load average %.1f on %d logical CPUs", 6*float64(numCPU()), numCPU()))
	ss = mk(1000, 2000)
	ss.FirstFailAbove().StealShare = 0.2
	require.Contains(t, strategyBound(ss, cfg), "20% of CPU time stolen")
	ss = mk(1000, 2000)
	n := float64(numCPU())
	ss.Knee.MachineBusyCores, ss.Knee.OtherCores = 0.95*n, 0.5*n
	require.Contains(t, strategyBound(ss, cfg), "other processes used")

	// -node-cap 2000: 1,000 lock ops/s. Steps that broke at 15% of it broke
	// on something else.
	capCfg := &Config{Workers: 64, Fake: 3, NodeCap: 2000}
	ss = mk(131, 150)
	b = strategyBound(ss, capCfg)
	require.True(t, strings.HasPrefix(b, "not the planted node cap"), b)
	require.Contains(t, b, "15% of it")
	ss = mk(700, 850)
	require.True(t, strings.HasPrefix(strategyBound(ss, capCfg), "the planted node cap"), strategyBound(ss, capCfg))
}

func TestParseProcStatCPU(t *testing.T) {
	a := parseProcStatCPU("cpu  100 0 50 800 50 0 0 0 0 0")
	b := parseProcStatCPU("cpu  250 0 100 850 50 0 0 50 0 0")
	busy, steal, ok := machineUse(a, b, 2)
	require.True(t, ok)
	require.InDelta(t, 2*200.0/300, busy, 1e-9)
	require.InDelta(t, 50.0/300, steal, 1e-9)
	require.False(t, parseProcStatCPU("intr 1 2 3").ok)
	_, _, ok = machineUse(a, a, 2)
	require.False(t, ok)
	require.False(t, math.IsNaN(busy))
}

// A sweep beside CPU burners that never reached a knee still says the
// machine was CPU-starved, and its plan is marked as upper bounds.
func TestSweepSaysStarvedWithoutAKnee(t *testing.T) {
	ss := modelSteps([]float64{1000, 2000}, 0)
	n := float64(numCPU())
	for _, st := range ss.Steps {
		st.MachineBusyCores, st.OtherCores = n, 0.9*n
	}
	finishStrategy(ss, report.SLO{P: 99, Max: 10 * time.Millisecond}, "-slo", &Config{Workers: 64, Fake: 3, SLO: &report.SLO{P: 99, Max: 10 * time.Millisecond}})
	require.Contains(t, ss.Starved, "other processes used")
	var w bytes.Buffer
	report.WriteSweepTable(&w, &report.SweepReport{Strategies: []*report.SweepStrategy{ss}})
	require.Contains(t, w.String(), "this machine was CPU-starved by other work")
	var md bytes.Buffer
	report.WriteKneeTable(&md, &report.SweepReport{Strategies: []*report.SweepStrategy{ss}})
	require.Contains(t, md.String(), "> **Warning: mux: this machine was CPU-starved")
	// A quiet machine: nothing said.
	quiet := modelSteps([]float64{1000, 2000}, 0)
	finishStrategy(quiet, report.SLO{P: 99, Max: 10 * time.Millisecond}, "-slo", &Config{Workers: 64, Fake: 3})
	require.Empty(t, quiet.Starved)
}

// Issue 48 item 3: a "fit" over one held step ("fitted over 1 step(s)
// that held (4740-4740 ops/s)") is flagged in the text, the plan and the
// plot's legend, which also keeps the report's "at most" and CPU-starved
// marks; three steps make a fit, flagged nowhere.
func TestOneStepFitIsFlagged(t *testing.T) {
	one := modelSteps([]float64{4740}, 5000)
	finishStrategy(one, report.SLO{P: 99, Max: 5 * time.Millisecond}, "-slo", &Config{Workers: 64, Fake: 3})
	one.Starved = "load average 9.8 on 2 logical CPUs"
	rep := &report.SweepReport{Config: report.ReportConfig{CapacityRate: 10000, Nodes: []string{"a", "b", "c"}}, Strategies: []*report.SweepStrategy{one}}
	var md, svg bytes.Buffer
	report.WriteCostFits(&md, rep)
	require.Contains(t, md.String(), "fitted over 1 step(s) that held (4740-4740 ops/s)")
	require.Contains(t, md.String(), "**NOT A FIT: one step held (4740 ops/s)")
	require.Contains(t, report.ProvisionFor(one, 10000, 0).Line(), "(costs fitted over only 1 step(s): not a fit)")
	require.NoError(t, report.WriteSweepPlot(&svg, rep))
	for _, want := range []string{"cost: one step, not a fit", "plan figures: at most", "CPU-starved machine"} {
		require.Contains(t, svg.String(), want)
	}

	three := modelSteps([]float64{1000, 2000, 4000}, 5000)
	finishStrategy(three, report.SLO{P: 99, Max: 5 * time.Millisecond}, "-slo", &Config{Workers: 64, Fake: 3})
	rep = &report.SweepReport{Strategies: []*report.SweepStrategy{three}}
	md.Reset()
	svg.Reset()
	report.WriteCostFits(&md, rep)
	require.NotContains(t, md.String(), "NOT A FIT")
	require.NotContains(t, md.String(), "only")
	require.NotContains(t, report.ProvisionFor(three, 10000, 0).Line(), "not a fit")
	require.NoError(t, report.WriteSweepPlot(&svg, rep))
	require.NotContains(t, svg.String(), "not a fit")
	require.NotContains(t, svg.String(), "at most")
}
