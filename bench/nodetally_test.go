package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redmux/redmux/bench/internal/report"
	"github.com/redmux/redmux/bench/load"
	"github.com/stretchr/testify/require"
)

// tallyWorker is a worker with a node tally and nothing else.
type tallyWorker struct {
	load.Worker
	t nodeTally
}

func (w tallyWorker) nodeTally() nodeTally { return w.t }

// Issue 48 item 4: the workers' tallies add up per node, with the first
// and last error of any worker; nodes without errors are left out, and a
// reset (after the warm-up) forgets what came before.
func TestNodeOutagesAddUpPerNode(t *testing.T) {
	start := time.Now()
	a, b := tallyWorker{t: make(nodeTally, 3)}, tallyWorker{t: make(nodeTally, 3)}
	a.t.note(2)
	a.t.note(7) // out of range: ignored
	resetNodeTallies([]load.Worker{a, b})
	require.Empty(t, nodeOutages([]load.Worker{a, b}, start))
	a.t.note(1)
	b.t.note(1)
	b.t.note(1)
	out := nodeOutages([]load.Worker{a, b}, start)
	require.Len(t, out, 1)
	require.Equal(t, 1, out[0].Node)
	require.Equal(t, int64(3), out[0].Errors)
	require.Equal(t, a.t[1].first.UTC().Format(time.RFC3339Nano), out[0].First)
	require.Equal(t, b.t[1].last.UTC().Format(time.RFC3339Nano), out[0].Last)
	require.LessOrEqual(t, out[0].FirstS, out[0].LastS)
	nameOutages(out, []string{"a:1", "b:2", "c:3"})
	require.Equal(t, "b:2", out[0].Addr)
	require.Contains(t, out[0].String(), "node 1 (b:2): 3 error(s) from ")
}

// Issue 48 item 4: a down node is named in the report, by index and
// address, with its error count and the times of its first and last
// error (before: only node_errors {"conn": N}).
func TestReportNamesTheFailingNodeAndWhen(t *testing.T) {
	dir := t.TempDir()
	rep, stdout, _ := runArgs(t, []string{"-fake", "3", "-strategy", "seq,mux", "-c", "2", "-d", "400ms", "-warmup", "50ms", "-timeout", "1s",
		"-fault", "down:2", "-out", dir}, false)
	for _, s := range rep.Strategies {
		require.Len(t, s.NodeOutages, 1, "%s: %+v", s.Name, s.NodeOutages)
		o := s.NodeOutages[0]
		require.Equal(t, 2, o.Node)
		require.Equal(t, rep.Config.Nodes[2], o.Addr)
		require.Positive(t, o.Errors)
		require.LessOrEqual(t, o.FirstS, o.LastS)
		require.Less(t, o.LastS, s.DurationS+2)
		require.Contains(t, stdout, s.Name+": node 2 ("+o.Addr+"): ", stdout)
	}
	js := readReport(t, filepath.Join(dir, "summary.json"))
	require.Equal(t, rep.Strategies[0].NodeOutages, js.Strategies[0].NodeOutages)
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	require.Contains(t, string(md), "Node errors by node")
	require.True(t, strings.Contains(string(md), "| mux | 2 | "+rep.Config.Nodes[2]), string(md))
}

// Issue 48 item 4: server-side costs that were not read (Sentinel and
// Cluster nodes: INFO commandstats is not asked through them) print as
// "not read" with the reason, not as zeros.
func TestServerCostNotReadIsNotZero(t *testing.T) {
	before := serverSnap{stats: []map[string]cmdStat{nil, nil}, nodeCPU: []float64{-1, -1}, cpuOK: true, cpuNs: 1e6}
	after := serverSnap{stats: []map[string]cmdStat{nil, nil}, nodeCPU: []float64{-1, -1}, cpuOK: true, cpuNs: 3e6}
	c := serverCost(before, after, 1000, 2)
	require.NotNil(t, c)
	require.Equal(t, "no node answered INFO commandstats", c.NotRead)
	notReadWhy(c, []string{"redis-sentinel://127.0.0.1:26379?sentinelMasterId=m", "redis-sentinel://127.0.0.1:26380?sentinelMasterId=m"})
	require.Contains(t, c.NotRead, "not asked through redis-sentinel:// nodes")
	var md strings.Builder
	report.WriteServerSection(&md, &report.Report{Strategies: []*report.StrategyResult{{Name: "mux", Ops: 1000, Server: c}}})
	require.Contains(t, md.String(), "| mux | not read | not read | not read | not read | 1.00 | 0 |", md.String())
	require.Contains(t, md.String(), "Not read: mux: INFO commandstats is not asked through redis-sentinel://")
}

// Issue 48 item 4: a sweep names the nodes that failed in each step, in
// its table's notes and in sweep.md.
func TestSweepNamesTheFailingNodeAndWhen(t *testing.T) {
	o := report.NodeOutage{Node: 2, Addr: "127.0.0.1:7002", Errors: 1500, FirstS: 2.5, LastS: 4,
		First: "2026-11-29T01:00:02.5Z", Last: "2026-11-29T01:00:04Z"}
	rep := &report.SweepReport{Strategies: []*report.SweepStrategy{{Name: "mux", SLO: "p99<5ms", Steps: []*report.SweepStep{
		{TargetRate: 1000, Tag: "mux.r1000", Held: true, Ops: 1000},
		{TargetRate: 2000, Tag: "mux.r2000", Held: true, Ops: 2000, NodeOutages: []report.NodeOutage{o}}}}}}
	want := "at 2000 ops/s (mux.r2000): node 2 (127.0.0.1:7002): 1500 error(s) from 2.50s to 4.00s into the measured window (01:00:02.500Z to 01:00:04.000Z)."
	var table, md strings.Builder
	report.WriteSweepTable(&table, rep)
	require.Contains(t, table.String(), want)
	report.WriteKneeTable(&md, rep)
	require.Contains(t, md.String(), "**mux: nodes that failed.** "+want)
}
