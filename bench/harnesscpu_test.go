package bench

import (
	"bytes"
	"testing"
	"time"

	"github.com/redmux/redmux/bench/internal/report"
	"github.com/redmux/redmux/bench/load"
	"github.com/stretchr/testify/require"
)

// The client's CPU per operation leaves the load generator's own out: the
// harness's share is reported apart, and the process's whole figure too.
func TestHarnessCPUReportedApart(t *testing.T) {
	h := load.NewHists()
	start := time.Now()
	r := &load.Result{Start: start, End: start.Add(time.Second), Hists: h, Ops: 1000, Acquired: 1000,
		CPUNs: 15e6, CPUOK: true, HarnessNs: 3e6, CollectNs: 1e6, LoopNsPerOp: 2000, Workers: 4}
	s := strategyResult("mux", load.RunConfig{}, r)
	require.InDelta(t, 15, s.ProcessCPUUsPerOp, 1e-9)
	require.InDelta(t, 3, s.HarnessCPUUsPerOp, 1e-9)
	require.InDelta(t, 12, s.CPUUsPerOp, 1e-9)

	var md bytes.Buffer
	report.WriteOutcomes(&md, &report.Report{Strategies: []*report.StrategyResult{s}})
	require.Contains(t, md.String(), "harness cpu us/op")
	require.Contains(t, md.String(), "| 12.00 | 3.00 |")
}
