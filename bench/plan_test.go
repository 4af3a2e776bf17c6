package bench

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redmux/redmux/bench/internal/hlog"
	"github.com/redmux/redmux/bench/internal/report"
	"github.com/redmux/redmux/internal/redisproc/redistest"
	"github.com/stretchr/testify/require"
)

// Tests of issue 25: capacity planning a planner can trust.

// readSweepJSON reads dir's sweep.json.
func readSweepJSON(t *testing.T, dir string) *report.SweepReport {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, report.FileSweepJSON))
	require.NoError(t, err)
	var rep report.SweepReport
	require.NoError(t, json.Unmarshal(b, &rep))
	return &rep
}

// Items 1, 3 (tags), 4 (saturated steps run again), 6 and 7
// (-fail-on-breach), on a planted knee: every node serves 200 commands/s
// (-node-cap), 100 lock ops/s, so 300 ops/s cannot keep up.
//
//   - With -slo auto, one objective judges every strategy, derived from
//     the best strategy's lightest step, and it is printed first.
//   - The saturated step at 300 ops/s is run again, each run with its own
//     interval-log tag.
//   - sweep.md has the Provisioning section for -capacity-rate, whose
//     groups come from the planted cap.
//   - The knee is below -capacity-rate: -fail-on-breach exits 3.
func TestSweepOneObjectiveProvisioningAndBreach(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	code := Main([]string{"sweep", "-fake", "5", "-slo", "auto", "-strategy", "fanout,mux", "-rates", "25,50,300", "-step", "1s", "-warmup", "300ms",
		"-timeout", "1s", "-refine", "0", "-node-cap", "200", "-capacity-rate", "1000", "-fail-on-breach", "-out", dir}, &out, &errb, noEnv)
	require.Equal(t, ExitBreach, code, "stderr: %s", errb.String())
	require.Contains(t, errb.String(), "breach (-fail-on-breach)")

	rep := readSweepJSON(t, dir)
	require.Len(t, rep.Strategies, 2)
	require.Contains(t, rep.SLOSource, "best strategy's lightest step")
	// One objective: the automatic bound of the lower of the two lightest
	// steps' p99, for both strategies.
	best := rep.Strategies[0].Steps[0].Latency.P99Us
	for _, ss := range rep.Strategies {
		require.Equal(t, 25.0, ss.Steps[0].TargetRate)
		best = min(best, ss.Steps[0].Latency.P99Us)
	}
	for _, ss := range rep.Strategies {
		require.Equal(t, rep.Strategies[0].SLOBudgetUs, ss.SLOBudgetUs, "%s has its own objective", ss.Name)
	}
	require.InDelta(t, float64(autoBudget(time.Duration(best*1e3)))/1e3, rep.Strategies[0].SLOBudgetUs, 0.02*rep.Strategies[0].SLOBudgetUs+10)
	// Printed first: before the table's steps, and before phase 2's
	// verdicts on stderr.
	require.True(t, strings.HasPrefix(out.String(), "objective for every strategy: "+rep.SLO), out.String())
	se := errb.String()
	require.Less(t, strings.Index(se, "objective for every strategy"), strings.Index(se, ": target 25 ops/s"), se)

	tags := map[string]bool{}
	for _, ss := range rep.Strategies {
		require.True(t, ss.Saturated, "%s: %+v", ss.Name, steps(ss))
		require.Less(t, ss.KneeRate, 300.0, "%s: %+v", ss.Name, steps(ss))
		var at300 []*report.SweepStep
		for _, st := range ss.Steps {
			require.False(t, tags[st.Tag], "tag %q used twice", st.Tag)
			tags[st.Tag] = true
			if st.TargetRate == 300 {
				at300 = append(at300, st)
			}
		}
		// A saturated step is run again, like a latency miss; the repeat
		// has its own tag.
		require.Len(t, at300, 2, "%s: %+v", ss.Name, steps(ss))
		require.True(t, at300[0].Saturated && at300[0].Repeated, "%+v", at300[0])
		require.Equal(t, ss.Name+".r300", at300[0].Tag)
		require.Equal(t, ss.Name+".r300.run2", at300[1].Tag)
		require.False(t, at300[1].Held)
		require.Contains(t, ss.Bound, "node cap")
	}
	hf, err := os.Open(filepath.Join(dir, report.FileSweepHlog))
	require.NoError(t, err)
	hs, err := hlog.Read(hf)
	hf.Close()
	require.NoError(t, err)
	merged, _ := hlog.MergeTagged(hs)
	require.Contains(t, merged, "mux.r300.acquire_release")
	require.Contains(t, merged, "mux.r300.run2.acquire_release")

	csvb, err := os.ReadFile(filepath.Join(dir, report.FileSweepCSV))
	require.NoError(t, err)
	require.Contains(t, string(csvb), ",mux.r300.run2,", "the CSV names each run's hlog tag")
	md, err := os.ReadFile(filepath.Join(dir, report.FileSweepReport))
	require.NoError(t, err)
	for _, want := range []string{"**Objective, the same for every strategy: " + rep.SLO, "## Provisioning", "For **1000 lock operations/s**",
		"Assumptions:", "planted -node-cap", "workers busy"} {
		require.Contains(t, string(md), want)
	}
	for _, ss := range rep.Strategies {
		p := report.ProvisionFor(ss, 1000, 200)
		require.Empty(t, p.None)
		// The cap (100 ops/s per node) at 70%: 15 groups at least.
		require.GreaterOrEqual(t, p.Groups, 15)
		require.Positive(t, p.ClientCPU)
		require.Equal(t, int(math.Ceil(1000/(ss.KneeRate*report.Utilisation))), p.Units)
	}
}

// Item 7: which outcomes are breaches.
func TestSweepBreaches(t *testing.T) {
	held := &report.SweepStep{TargetRate: 100, Held: true}
	rep := &report.SweepReport{Strategies: []*report.SweepStrategy{
		{Name: "a", Knee: held, KneeRate: 100, Saturated: true},
		{Name: "b", Knee: held, KneeRate: 100},
		{Name: "c", Steps: []*report.SweepStep{{TargetRate: 50}}, Saturated: true},
	}}
	b := rep.Breaches()
	require.Len(t, b, 1, "without -capacity-rate only a strategy where nothing held: %q", b)
	require.Contains(t, b[0], "c: no step held")
	rep.Config.CapacityRate = 80
	require.Len(t, rep.Breaches(), 1)
	rep.Config.CapacityRate = 150
	b = rep.Breaches()
	require.Len(t, b, 3)
	require.Contains(t, b[0], "a: capacity 100 ops/s")
	require.Contains(t, b[1], "not shown to hold")
}

// Item 6: the hint when no step held says what to change.
func TestNoKneeHint(t *testing.T) {
	ss := &report.SweepStrategy{Name: "seq", SLOPct: 99, SLOBudgetUs: 1000, Saturated: true,
		Steps: []*report.SweepStep{{TargetRate: 200, SLOUs: 4000}, {TargetRate: 100, SLOUs: 3000, Ops: 100}}}
	h := report.NoKneeHint(ss)
	require.Contains(t, h, "lightest step (100 ops/s) measured p99 3.00ms")
	require.Contains(t, h, "-slo 'p99<4.5ms'")
	ss.Steps[1].FailedShare = 0.5
	require.Contains(t, report.NoKneeHint(ss), "fail")
	ss.Knee = ss.Steps[1]
	require.Empty(t, report.NoKneeHint(ss))

	var w bytes.Buffer
	ss.Knee = nil
	report.WriteSweepTable(&w, &report.SweepReport{Strategies: []*report.SweepStrategy{ss}})
	require.Contains(t, w.String(), "hint: ")
}

// Item 4: "bound by the workers" only when they were measured to be the
// limit: busy all the time past the knee, and the rate asked for needing
// more workers than -c at the knee's service time.
func TestSweepBoundByWorkersOnlyWhenMeasured(t *testing.T) {
	cfg := &Config{Workers: 64, Nodes: []string{"a", "b", "c"}}
	mk := func(busy, serviceUs float64) *report.SweepStrategy {
		ss := &report.SweepStrategy{Steps: []*report.SweepStep{
			{TargetRate: 1000, Held: true, MeanServiceUs: serviceUs, ClientCPUUsPerOp: 10},
			{TargetRate: 2000, WorkerBusyShare: busy, MeanServiceUs: 50 * serviceUs},
		}}
		ss.FindKnee()
		return ss
	}
	// 64 workers at 5ms carry 12.8k ops/s: a 2,000 ops/s step that failed
	// with busy workers was waiting on the servers, not short of workers.
	ss := mk(1, 5000)
	require.False(t, strings.HasPrefix(strategyBound(ss, cfg), "the workers"), strategyBound(ss, cfg))
	// At 40ms they carry 1,600 ops/s: 2,000 needs more workers.
	ss = mk(0.97, 40000)
	require.True(t, strings.HasPrefix(strategyBound(ss, cfg), "the workers"), strategyBound(ss, cfg))
	// Not busy: not the workers, whatever the arithmetic.
	ss = mk(0.5, 40000)
	require.False(t, strings.HasPrefix(strategyBound(ss, cfg), "the workers"), strategyBound(ss, cfg))
}

// Item 4, measured: 2 workers against nodes that answer 20ms late carry
// about 2 / 40ms = 50 ops/s (acquire and release are a round trip each):
// the 120 ops/s step is saturated by the workers, and the verdict says so.
func TestSweepBoundByWorkersMeasured(t *testing.T) {
	rep, _, _ := runSweepArgs(t, "-fake", "3", "-strategy", "fanout", "-c", "2", "-latency", "20ms", "-timeout", "1s", "-rates", "10,20,120",
		"-step", "1s", "-warmup", "200ms", "-slo", "p99<2s", "-refine", "0", "-quiet", "-out", "")
	ss := rep.Strategies[0]
	require.True(t, ss.Saturated, "%+v", steps(ss))
	require.Equal(t, 20.0, ss.KneeRate, "%+v", steps(ss))
	f := ss.FirstFailAbove()
	require.NotNil(t, f)
	require.Greater(t, f.WorkerBusyShare, sweepWorkersBusy, "%+v", f)
	require.True(t, strings.HasPrefix(ss.Bound, "the workers"), ss.Bound)
	require.Greater(t, ss.Knee.MeanServiceUs, 39000.0, "at least two 20ms round trips")
}

// Item 5, against real servers given by -nodes (so no process to read):
// every step has server CPU from INFO CPU, and sweep.md sizes server cores.
func TestSweepServerCPUFromRemoteNodes(t *testing.T) {
	servers := redistest.StartN(t, 3, redistest.Options{})
	dir := t.TempDir()
	runSweepArgs(t, "-nodes", strings.Join(redistest.Addrs(servers), ","), "-fresh-nodes", "-strategy", "mux", "-rates", "200,400",
		"-step", "700ms", "-warmup", "200ms", "-slo", "p99<2s", "-refine", "0", "-capacity-rate", "10000", "-quiet", "-out", dir)
	rep := readSweepJSON(t, dir)
	require.Contains(t, rep.Env.ServerCPU, "INFO CPU")
	for _, st := range rep.Strategies[0].Steps {
		require.Equal(t, "info", st.ServerCPUSource, "%+v", st)
		require.Positive(t, st.ServerCPUUsPerOpPerNode)
		require.GreaterOrEqual(t, st.ServerCPUMaxNodeUsPerOp, st.ServerCPUUsPerOpPerNode)
	}
	md, err := os.ReadFile(filepath.Join(dir, report.FileSweepReport))
	require.NoError(t, err)
	require.Contains(t, string(md), "## Provisioning")
	require.Contains(t, string(md), "each node's INFO CPU")
}
