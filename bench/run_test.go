package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redmux/redmux/bench/internal/hlog"
	"github.com/redmux/redmux/bench/internal/report"
	"github.com/redmux/redmux/bench/load"
	"github.com/redmux/redmux/internal/redisproc/redistest"
	"github.com/stretchr/testify/require"
)

// runArgs runs a parsed command line and returns the report and outputs.
func runArgs(t *testing.T, args []string, term bool) (*report.Report, string, string) {
	t.Helper()
	cfg, err := ParseArgs(args, noEnv)
	require.NoError(t, err)
	var out, errb bytes.Buffer
	rep, err := Run(context.Background(), cfg, Options{Stdout: &out, Stderr: &errb, Terminal: &term})
	require.NoError(t, err, "stderr: %s", errb.String())
	return rep, out.String(), errb.String()
}

func TestEndToEndFakeClusterJSONSchema(t *testing.T) {
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "x.json")
	hlogPath := filepath.Join(dir, "x.hlog")
	out := filepath.Join(dir, "out")
	// A generous node timeout: "no errors on a healthy cluster" must not
	// depend on a loaded machine (-race, other packages' tests, two shared
	// cores) answering within the default 50ms.
	rep, stdout, _ := runArgs(t, []string{"-strategy", "all", "-c", "4", "-d", "400ms", "-warmup", "50ms", "-timeout", "1s",
		"-json", jsonPath, "-hlog", hlogPath, "-out", out, "-fake", "3"}, false)
	require.Len(t, rep.Strategies, 3)
	for _, s := range rep.Strategies {
		require.Positive(t, s.Ops, s.Name)
		require.Equal(t, s.Ops, s.Acquired+s.NotAcquired, "%s: no errors expected on a healthy cluster: %v", s.Name, s.Errors)
		require.Positive(t, s.Acquire.P50Us)
		require.GreaterOrEqual(t, s.AcquireRelease.P99Us, s.Acquire.P50Us)
		require.Positive(t, s.CPUUsPerOp)
		require.NotNil(t, s.Server)
		// SET per acquire attempt and EVALSHA per release, on every node.
		require.GreaterOrEqual(t, s.Server.SetCalls, 3*s.Ops)
	}
	require.Contains(t, stdout, "acq+rel p99")
	require.Contains(t, stdout, "seq")

	// The JSON object has exactly the schema (and more).
	b, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(b, &doc))
	require.Contains(t, doc, "config")
	require.Contains(t, doc, "env")
	// Issue 36 item 4: the build that ran (under go test, as under go run,
	// the revision comes from git at run time; see version.go).
	build := doc["env"].(map[string]any)["build"].(map[string]any)
	for _, k := range []string{"version", "module_version", "revision_source"} {
		require.IsType(t, "", build[k], k)
	}
	require.Equal(t, versionString(), build["version"])
	if b := currentBuild(); b.Revision != "" {
		require.Equal(t, b.Revision, build["revision"])
		require.Equal(t, b.Revision[:12], doc["env"].(map[string]any)["revision"])
	}
	strategies := doc["strategies"].([]any)
	require.Len(t, strategies, 3)
	for _, x := range strategies {
		s := x.(map[string]any)
		for _, k := range []string{"name", "ops", "ops_per_sec", "errors", "allocs_per_op", "cpu_us_per_op"} {
			require.Contains(t, s, k)
		}
		for _, m := range []string{"acquire", "release", "acquire_release"} {
			l := s[m].(map[string]any)
			for _, k := range []string{"count", "min_us", "mean_us", "p50_us", "p90_us", "p99_us", "p999_us", "p9999_us", "max_us"} {
				require.Contains(t, l, k, m)
				require.IsType(t, float64(0), l[k])
			}
		}
		require.IsType(t, map[string]any{}, s["errors"])
	}
	cfg := doc["config"].(map[string]any)
	require.Equal(t, "closed", cfg["loop"])
	require.Equal(t, false, cfg["password_set"])

	// The interval log reads back and holds every strategy and metric.
	f, err := os.Open(hlogPath)
	require.NoError(t, err)
	hs, err := hlog.Read(f)
	f.Close()
	require.NoError(t, err)
	merged, _ := hlog.MergeTagged(hs)
	for _, s := range rep.Strategies {
		h := merged[s.Name+"."+load.MetricAcquire]
		require.NotNil(t, h)
		require.Equal(t, s.Acquire.Count, h.TotalCount())
	}

	// The report directory.
	for _, name := range []string{report.FileReport, report.FileSummary, report.FileHlog, report.FilePlot, report.FilePlotAcquire} {
		st, err := os.Stat(filepath.Join(out, name))
		require.NoError(t, err, name)
		require.Positive(t, st.Size(), name)
	}
	md, _ := os.ReadFile(filepath.Join(out, report.FileReport))
	for _, want := range []string{"## Results", "## Capacity", "## Server-side cost", "## Configuration", "## Environment", "redmux-bench -strategy all",
		"| revision | " + currentBuild().Describe()} {
		require.Contains(t, string(md), want)
	}
	hl, _ := os.ReadFile(hlogPath)
	require.Contains(t, string(hl), "#"+versionString()+"\n", "the interval log's header names the build")
	svg, _ := os.ReadFile(filepath.Join(out, report.FilePlot))
	requireSVG(t, svg, 3)
}

// requireSVG checks the plot is well-formed XML with one line per strategy.
func requireSVG(t *testing.T, b []byte, lines int) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	polylines := 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "polyline" {
			polylines++
		}
	}
	require.Equal(t, lines, polylines)
}

func TestEndToEndRealRedis(t *testing.T) {
	const pw = "real-secret-pw"
	servers := redistest.StartN(t, 3, redistest.Options{Password: pw})
	dir := t.TempDir()
	addrs := strings.Join(redistest.Addrs(servers), ",")
	var out, errb bytes.Buffer
	env := func(k string) string {
		if k == envPassword {
			return pw
		}
		return ""
	}
	// A generous per-node timeout: on a loaded machine a 50ms one lets an
	// extension time out now and then, and this test is about the figures.
	run := []string{"-nodes", addrs, "-strategy", "all", "-c", "4", "-d", "300ms", "-warmup", "0s", "-timeout", "1s",
		"-workload", "acquire-extend-release", "-out", dir, "-force", "-json", filepath.Join(dir, "j.json")}
	// Just started: the lock quarantines them (docs/OPERATIONS.md), and the
	// run says so rather than measure failed acquisitions.
	code := Main(run, &out, &errb, env)
	require.Equal(t, ExitFailure, code, errb.String())
	require.Contains(t, errb.String(), "quarantines them")
	require.Contains(t, errb.String(), "-fresh-nodes")
	out.Reset()
	errb.Reset()
	code = Main(append(run, "-fresh-nodes"), &out, &errb, env)
	require.Equal(t, ExitOK, code, errb.String())
	var rep report.Report
	b, err := os.ReadFile(filepath.Join(dir, "j.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &rep))
	require.Len(t, rep.Strategies, 3)
	for _, s := range rep.Strategies {
		require.Positive(t, s.Acquired, s.Name)
		require.Equal(t, s.Acquired, s.Extended, "%s: every held lock extends", s.Name)
		require.NotNil(t, s.Server)
		require.Equal(t, 3, s.Server.NodesReporting)
		require.Positive(t, s.Server.SetUsecPerCall, "real Redis reports usec_per_call for SET")
		require.Positive(t, s.Server.EvalshaUsecPerCall)
	}
	require.True(t, rep.Config.PasswordSet)
	require.Contains(t, rep.Env.Server, "redis ")

	// The password is nowhere: not in stdout, stderr or any written file.
	all := out.String() + errb.String()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		all += string(b)
	}
	require.NotContains(t, all, pw)

	// Wrong password: a run failure, one line, no password.
	out.Reset()
	errb.Reset()
	code = Main([]string{"-nodes", addrs, "-d", "100ms", "-out", "", "-password", "wrong-pw-xyz"}, &out, &errb, noEnv)
	require.Equal(t, ExitFailure, code)
	require.Equal(t, 1, strings.Count(withoutPasswordWarning(t, errb.String()), "\n"), errb.String())
	require.Contains(t, errb.String(), "authentication failed")
	require.NotContains(t, out.String()+errb.String(), "wrong-pw-xyz")
}

func TestFaultDownNodeStillReachesQuorum(t *testing.T) {
	// A generous node timeout: the property is that the down node is counted,
	// not that a loaded machine answers within 50ms.
	rep, _, _ := runArgs(t, []string{"-strategy", "all", "-c", "2", "-d", "300ms", "-warmup", "0s", "-out", "", "-timeout", "1s",
		"-fault", "down:2", "-quiet"}, false)
	require.Len(t, rep.Strategies, 3)
	for _, s := range rep.Strategies {
		require.Positive(t, s.Acquired, s.Name)
		require.Empty(t, s.Errors, s.Name)
		require.Positive(t, s.NodeErrors[kindConn], "%s: the down node's failures are counted", s.Name)
	}
	require.Equal(t, []string{"down:2"}, rep.Config.Faults)
}

func TestEmbeddedPasswordAndInProcess(t *testing.T) {
	var out, errb bytes.Buffer
	env := func(k string) string {
		if k == envPassword {
			return "emb-pw-123"
		}
		return ""
	}
	code := Main([]string{"-fake", "3", "-inprocess", "-strategy", "seq", "-c", "2", "-n", "50", "-warmup", "0s", "-out", ""}, &out, &errb, env)
	require.Equal(t, ExitOK, code, errb.String())
	require.Contains(t, out.String(), "in the benchmark's process")
	require.NotContains(t, out.String()+errb.String(), "emb-pw-123")
}

func TestProgressOnlyOnTerminal(t *testing.T) {
	args := []string{"-strategy", "seq", "-c", "2", "-d", "1200ms", "-warmup", "0s", "-out", "", "-fake", "3"}
	_, _, stderr := runArgs(t, args, true)
	require.Contains(t, stderr, "ops/s")
	require.Contains(t, stderr, "p99")
	_, stdout, stderr := runArgs(t, args, false)
	require.Empty(t, stderr)
	require.NotEmpty(t, stdout)
	_, stdout, stderr = runArgs(t, append(args, "-quiet"), true)
	require.Empty(t, stderr)
	require.Empty(t, stdout)
}

// stallWorker answers at once, except that one call stalls.
type stallWorker struct {
	calls atomic.Int64
	stall int64
	d     time.Duration
}

func (w *stallWorker) Acquire(ctx context.Context, key string) (bool, error) {
	if w.calls.Add(1) == w.stall {
		time.Sleep(w.d)
	}
	return true, nil
}
func (w *stallWorker) Extend(context.Context) (bool, error) { return true, nil }
func (w *stallWorker) Release(context.Context) error        { return nil }
func (w *stallWorker) NodeErrors() map[string]int64         { return nil }
func (w *stallWorker) Close() error                         { return nil }

type oneWorker struct{ w load.Worker }

func (s oneWorker) Name() string                                   { return "stall" }
func (s oneWorker) NewWorker(context.Context) (load.Worker, error) { return s.w, nil }
func (s oneWorker) Close() error                                   { return nil }

func TestOpenLoopChargesStallsToEveryScheduledOp(t *testing.T) {
	// 1 worker at 1000 ops/s; op 100 stalls 100ms. Open loop measures from
	// each op's intended start, so the ~100 ops scheduled during the stall
	// all show the delay (coordinated omission not hidden).
	w := &stallWorker{stall: 100, d: 100 * time.Millisecond}
	res, err := runStrategy(context.Background(), oneWorker{w}, load.RunConfig{Workers: 1, Ops: 400, Rate: 1000, Keys: 10, Workload: load.WorkloadAcquireRelease}, nil, nil, nil)
	require.NoError(t, err)
	require.Equal(t, int64(400), res.Ops)
	require.GreaterOrEqual(t, res.Acquire.P90Us, 20e3, "ops queued behind the stall are charged for it")
	require.GreaterOrEqual(t, res.Acquire.MaxUs, 100e3)
	require.InDelta(t, 1000, res.OpsPerSec, 300)

	// Closed loop: only the stalled op itself is slow.
	w = &stallWorker{stall: 100, d: 100 * time.Millisecond}
	res, err = runStrategy(context.Background(), oneWorker{w}, load.RunConfig{Workers: 1, Ops: 400, Keys: 10, Workload: load.WorkloadAcquireRelease}, nil, nil, nil)
	require.NoError(t, err)
	require.Less(t, res.Acquire.P90Us, 1e3)
	require.GreaterOrEqual(t, res.Acquire.MaxUs, 100e3)
}

func TestCapacityEstimateAndNoExtrapolation(t *testing.T) {
	s := &report.StrategyResult{Name: "x", Ops: 1000, OpsPerSec: 900, CPUUsPerOp: 50, AcquireRelease: report.Latency{Count: 1000, MeanUs: 2000},
		Server: &report.ServerCost{NodesReporting: 5, CPUUsPerOpPerNode: 20}}
	c, err := report.EstimateCapacity(s)
	require.NoError(t, err)
	require.InDelta(t, 20000, c.ClientOpsPerCore, 1e-6)
	require.InDelta(t, 50000, c.NodeOpsPerS, 1e-6)
	// Issue 12 item 5: the single run's report gives costs per operation
	// and sends capacity questions to the sweep; no plan is extrapolated.
	var b bytes.Buffer
	report.WriteCapacity(&b, &report.Report{Config: report.ReportConfig{Nodes: []string{"a", "b", "c", "d", "e"}, CapacityRate: 1e5}, Strategies: []*report.StrategyResult{s}})
	require.Contains(t, b.String(), "redmux-bench sweep")
	require.NotContains(t, b.String(), "ops in flight")
	require.NotContains(t, b.String(), "Redlock groups")
}

// TestFencedWorkload: -workload fenced runs mux with fencing tokens written
// to a fenced counter (no stale token), and refuses seq and fanout.
func TestFencedWorkload(t *testing.T) {
	rep, _, _ := runArgs(t, []string{"-workload", "fenced", "-c", "4", "-d", "300ms", "-warmup", "0s", "-out", "", "-timeout", "1s", "-quiet"}, false)
	require.Len(t, rep.Strategies, 1)
	s := rep.Strategies[0]
	require.Equal(t, strategyMux, s.Name)
	require.Equal(t, load.WorkloadFenced, rep.Config.Workload)
	require.Positive(t, s.Acquired)
	require.Empty(t, s.Errors)
	require.Zero(t, s.NodeErrors[kindFencedStale])
	_, err := ParseArgs([]string{"-workload", "fenced", "-strategy", "seq"}, noEnv)
	require.ErrorContains(t, err, "mux only")
}
