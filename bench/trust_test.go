package bench

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redmux/redmux/bench/internal/hlog"
	"github.com/redmux/redmux/bench/internal/report"
	"github.com/redmux/redmux/bench/load"
	"github.com/stretchr/testify/require"
)

// Issue 12 item 1: with no quorum possible every operation fails; the
// failures are visible (own histogram, counts, node errors by kind) and the
// run exits 1 with one line saying why.
func TestFailingRunShowsFailures(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	code := Main([]string{"-fake", "3", "-fault", "down:1", "-fault", "down:2", "-strategy", "all", "-c", "2",
		"-d", "300ms", "-warmup", "0s", "-out", dir}, &out, &errb, noEnv)
	require.Equal(t, ExitFailure, code, errb.String())
	msg := errb.String()
	require.Equal(t, 1, strings.Count(msg, "\n"), "one line: %q", msg)
	require.Contains(t, msg, "most operations failed")
	require.Contains(t, msg, "no_quorum=")

	b, err := os.ReadFile(filepath.Join(dir, report.FileSummary))
	require.NoError(t, err)
	var rep report.Report
	require.NoError(t, json.Unmarshal(b, &rep))
	require.Len(t, rep.Strategies, 3)
	for _, s := range rep.Strategies {
		require.Positive(t, s.Ops, s.Name)
		require.Equal(t, s.Ops, s.Failed, "%s: every operation failed", s.Name)
		require.Equal(t, s.Failed, s.FailedLat.Count, "%s: every failure is in the failed histogram", s.Name)
		require.Positive(t, s.FailedLat.P99Us, s.Name)
		require.Zero(t, s.Acquire.Count, s.Name)
		require.Equal(t, s.Ops, s.Errors[kindNoQuorum], s.Name)
		require.Positive(t, s.NodeErrors[kindConn], "%s: down nodes count as conn errors: %v", s.Name, s.NodeErrors)
	}
	table := out.String()
	require.Contains(t, table, "failed")
	require.Contains(t, table, "node errors")
	require.Contains(t, table, "conn=")
	require.Contains(t, table, "warning: seq:")
	require.NotRegexp(t, `(^|\s)0us`, table, "no zero latencies for empty histograms")

	md, _ := os.ReadFile(filepath.Join(dir, report.FileReport))
	require.Contains(t, string(md), "### Failed (latency to failure) latency (us)")
	require.Contains(t, string(md), "**Warning:**")
	require.Contains(t, string(md), "Not estimated: seq")
	svg, _ := os.ReadFile(filepath.Join(dir, report.FilePlotAcquire))
	requireSVG(t, svg, 3) // per strategy the failed line; acquire has no data
	require.Contains(t, string(svg), "no data")
	require.Contains(t, string(svg), "seq failed")
}

// slowReleaseWorker acquires at once and releases slowly, refuses every
// fourth key and fails every seventh attempt, so that every metric has
// values and releases land in intervals without acquires.
type slowReleaseWorker struct {
	n       atomic.Int64
	release time.Duration
}

func (w *slowReleaseWorker) Acquire(ctx context.Context, key string) (bool, error) {
	switch n := w.n.Add(1); {
	case n%7 == 0:
		return false, errNoQuorum
	case n%4 == 0:
		return false, nil
	}
	return true, nil
}
func (w *slowReleaseWorker) Extend(context.Context) (bool, error) { return true, nil }
func (w *slowReleaseWorker) Release(context.Context) error {
	time.Sleep(w.release)
	if w.n.Load()%5 == 0 {
		return errNoQuorum
	}
	return nil
}
func (w *slowReleaseWorker) NodeErrors() map[string]int64 { return nil }
func (w *slowReleaseWorker) Close() error                 { return nil }

// Issue 12 item 2: the interval log holds every recorded value: per tag,
// its totals equal the summary's counts.
func TestHlogTotalsEqualSummaryCounts(t *testing.T) {
	var buf bytes.Buffer
	hw := hlog.NewWriter(&buf, time.Now())
	w := &slowReleaseWorker{release: 6 * time.Millisecond}
	res, err := runStrategy(context.Background(), oneWorker{w}, load.RunConfig{Workers: 1, Duration: 300 * time.Millisecond,
		Keys: 10, Workload: load.WorkloadAcquireRelease, Interval: 2 * time.Millisecond}, hw, nil, nil)
	require.NoError(t, err)
	hs, err := hlog.Read(&buf)
	require.NoError(t, err)
	merged, dropped := hlog.MergeTagged(hs)
	require.Zero(t, dropped)
	for _, m := range load.Metrics {
		l := res.Metric(m)
		require.Positive(t, l.Count, m)
		h := merged["stall."+m]
		require.NotNil(t, h, m)
		require.Equal(t, l.Count, h.TotalCount(), "%s: hlog total vs summary count", m)
	}
	require.Equal(t, res.Ops, res.Acquired+res.NotAcquired+(res.Failed-res.ReleaseFailed))
	require.Equal(t, res.Failed, res.FailedLat.Count)
	require.Positive(t, res.ReleaseFailed)
}

// Issue 12 item 2: Summarize's percentiles are load.ValueAtPercentile's
// ceiling rank (bench/load's TestPercentileIsCeilingRank works them out by
// hand), on 70 values 1ms..70ms.
func TestSummarizeIsCeilingRank(t *testing.T) {
	h := load.NewHistogram()
	for i := 1; i <= 70; i++ {
		load.Record(h, time.Duration(i)*time.Millisecond)
	}
	l := report.Summarize(h, 98)
	require.Equal(t, us(highestEq(70e6)), l.P99Us)
	require.Equal(t, us(highestEq(63e6)), l.P90Us)
	require.Equal(t, []report.Percentile{{P: 98, Us: us(highestEq(69e6))}}, l.Percentiles)
}

// highestEq and lowestEq are the bounds of v's bucket in the bench geometry
// (1us lowest: unit 512ns; 3 digits: 2048 sub-buckets, 1024 per doubling),
// computed by hand, not by the library.
func highestEq(v int64) int64 { return lowestEq(v) + resAt(v) - 1 }
func lowestEq(v int64) int64  { return v / resAt(v) * resAt(v) }
func resAt(v int64) int64 {
	k := 0
	for v >= int64(2048*512)<<k {
		k++
	}
	return int64(512) << k
}

// slowWorker takes d per acquire.
type slowWorker struct{ d time.Duration }

func (w slowWorker) Acquire(ctx context.Context, key string) (bool, error) {
	time.Sleep(w.d)
	return true, nil
}
func (w slowWorker) Extend(context.Context) (bool, error) { return true, nil }
func (w slowWorker) Release(context.Context) error        { return nil }
func (w slowWorker) NodeErrors() map[string]int64         { return nil }
func (w slowWorker) Close() error                         { return nil }

// Issue 12 item 3: an open-loop run above capacity says so, stops at -d,
// and its figures are refused by the capacity maths.
func TestOpenLoopSaturation(t *testing.T) {
	// One worker at 2ms per op serves ~500 ops/s; ask for 2000.
	res, err := runStrategy(context.Background(), oneWorker{slowWorker{2 * time.Millisecond}}, load.RunConfig{Workers: 1,
		Duration: 400 * time.Millisecond, Rate: 2000, Keys: 10, Workload: load.WorkloadAcquireRelease}, nil, nil, nil)
	require.NoError(t, err)
	// A saturated run stops at -d, it does not work off its queue: of the
	// 800 operations due, far fewer ran (one worker at 2ms: about 200),
	// and the rest are left as the backlog.
	require.Less(t, res.Ops, int64(600), "%+v", res)
	require.Greater(t, res.Backlog, int64(200), "%+v", res)
	require.True(t, res.Saturated, "%+v", res)
	require.Equal(t, 2000.0, res.TargetRate)
	require.Less(t, res.OpsPerSec, 0.97*2000)
	require.Positive(t, res.Backlog)
	require.Contains(t, res.Saturation, "target")
	_, err = report.EstimateCapacity(res)
	require.ErrorIs(t, err, report.ErrNotSteady)

	// Well below capacity: not saturated, estimable.
	res, err = runStrategy(context.Background(), oneWorker{slowWorker{time.Millisecond}}, load.RunConfig{Workers: 2,
		Duration: 400 * time.Millisecond, Rate: 100, Keys: 10, Workload: load.WorkloadAcquireRelease}, nil, nil, nil)
	require.NoError(t, err)
	require.False(t, res.Saturated, res.Saturation)
	require.InDelta(t, 100, res.OpsPerSec, 15)
	require.LessOrEqual(t, res.Backlog, int64(2))
	_, err = report.EstimateCapacity(res)
	require.NoError(t, err)

	// The table marks it.
	rep := &report.Report{Config: report.ReportConfig{Rate: 2000, Loop: "open"}, Strategies: []*report.StrategyResult{{Name: "x", Ops: 10, OpsPerSec: 500, TargetRate: 2000, Saturated: true, Saturation: "achieved 500 of the 2000 ops/s target (25%)"}}}
	var tb bytes.Buffer
	report.WriteTable(&tb, rep)
	require.Contains(t, tb.String(), "x (saturated)")
	require.Contains(t, tb.String(), "target/s")
	require.Contains(t, tb.String(), "warning: x saturated: achieved 500")
}

// Issue 12 item 4: -json - and -csv - write to stdout (the table goes to
// stderr), -csv FILE, -percentiles, progress lines off a terminal.
func TestStdoutOutputsCSVAndPercentiles(t *testing.T) {
	base := []string{"-fake", "3", "-strategy", "seq,mux", "-c", "2", "-d", "300ms", "-warmup", "0s", "-out", ""}
	var out, errb bytes.Buffer
	require.Equal(t, ExitOK, Main(append(base, "-json", "-", "-percentiles", "50,90,99,99.9"), &out, &errb, noEnv), errb.String())
	var rep report.Report
	require.NoError(t, json.Unmarshal(out.Bytes(), &rep), "stdout is the JSON alone: %q", out.String())
	require.Len(t, rep.Strategies, 2)
	require.Equal(t, []float64{50, 90, 99, 99.9}, rep.Config.Percentiles)
	ps := rep.Strategies[0].Acquire.Percentiles
	require.Len(t, ps, 4)
	require.Equal(t, 99.9, ps[3].P)
	require.Equal(t, rep.Strategies[0].Acquire.P999Us, ps[3].Us)
	require.Contains(t, errb.String(), "acq p90", "the table went to stderr with the chosen percentiles")
	require.Contains(t, errb.String(), "acq+rel p99.9")

	out.Reset()
	errb.Reset()
	require.Equal(t, ExitOK, Main(append(base, "-csv", "-", "-quiet"), &out, &errb, noEnv), errb.String())
	rows, err := csv.NewReader(&out).ReadAll()
	require.NoError(t, err)
	require.Len(t, rows, 1+2*len(load.Metrics))
	require.Equal(t, []string{"strategy", "metric", "count"}, rows[0][:3])
	require.Contains(t, rows[0], "p99.99_us")
	require.Equal(t, "seq", rows[1][0])

	p := filepath.Join(t.TempDir(), "r.csv")
	out.Reset()
	require.Equal(t, ExitOK, Main(append(base, "-csv", p, "-percentiles", "p50,99.5"), &out, &errb, noEnv))
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Contains(t, strings.SplitN(string(b), "\n", 2)[0], "p50_us,p99.5_us,max_us")

	// Off a terminal, a progress line every -progress (at the 1 s
	// collection ticks).
	cfg, err := ParseArgs(append(base, "-strategy", "seq", "-d", "2200ms"), noEnv)
	require.NoError(t, err)
	term := false
	errb.Reset()
	_, err = Run(context.Background(), cfg, Options{Stdout: &out, Stderr: &errb, Terminal: &term, ProgressEvery: time.Second})
	require.NoError(t, err)
	require.GreaterOrEqual(t, strings.Count(errb.String(), "redmux-bench: seq"), 2, errb.String())
	require.NotContains(t, errb.String(), "\r")
}

func TestDurationAndPercentileFlagErrors(t *testing.T) {
	for want, args := range map[string][]string{
		"a duration needs a unit: 5s or 5ms":  {"-d", "5"},
		"-ttl: a duration needs a unit":       {"-ttl", "30"},
		"not a duration":                      {"-timeout", "fast"},
		"percentiles are numbers in (0, 100]": {"-percentiles", "50,101"},
		"given twice":                         {"-percentiles", "99,99"},
		"both want stdout":                    {"-json", "-", "-csv", "-"},
		"-progress must not be negative":      {"-progress", "-1s"},
	} {
		_, err := ParseArgs(args, noEnv)
		require.ErrorIs(t, err, ErrUsage, "%v", args)
		require.Contains(t, err.Error(), want, "%v", args)
	}
}
