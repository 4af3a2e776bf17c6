package bench

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redmux/redmux/bench/load"
	"github.com/stretchr/testify/require"
)

func TestParseHoldAndKeyDist(t *testing.T) {
	for in, want := range map[string]load.Hold{
		"0": {}, "5ms": {Kind: "fixed", A: 5 * time.Millisecond}, "uniform:1ms:3ms": {Kind: "uniform", A: time.Millisecond, B: 3 * time.Millisecond},
		"exp:2ms": {Kind: "exp", A: 2 * time.Millisecond},
	} {
		h, err := load.ParseHold(in)
		require.NoError(t, err, in)
		require.Equal(t, want, h, in)
		if in != "0" {
			require.Equal(t, in, h.String())
		}
	}
	for _, bad := range []string{"5", "-1ms", "uniform:3ms:1ms", "uniform:1ms", "exp:0s", "exp:x", "normal:1ms", "2m"} {
		_, err := load.ParseHold(bad)
		require.Error(t, err, bad)
	}
	for in, want := range map[string]load.KeyDist{"round-robin": {Kind: load.KeysRoundRobin}, "uniform": {Kind: load.KeysUniform}, "zipf:1.1": {Kind: load.KeysZipf, S: 1.1}} {
		d, err := load.ParseKeyDist(in)
		require.NoError(t, err, in)
		require.Equal(t, want, d)
		require.Equal(t, in, d.String())
	}
	for _, bad := range []string{"zipf", "zipf:1", "zipf:0.5", "zipf:x", "random"} {
		_, err := load.ParseKeyDist(bad)
		require.Error(t, err, bad)
	}
	c, err := ParseArgs([]string{"-hold", "exp:1ms", "-keys-dist", "zipf:1.2"}, noEnv)
	require.NoError(t, err)
	require.Equal(t, load.Hold{Kind: "exp", A: time.Millisecond}, c.Hold)
	require.Equal(t, load.KeyDist{Kind: load.KeysZipf, S: 1.2}, c.KeyDist)
	for _, args := range [][]string{{"-hold", "5"}, {"-keys-dist", "zipf:1"}} {
		_, err := ParseArgs(args, noEnv)
		require.ErrorIs(t, err, ErrUsage, "%v", args)
		require.Contains(t, err.Error(), args[0])
	}
}

// keyCounter counts the keys it is asked for (instant, always acquires).
type keyCounter struct {
	mu   *sync.Mutex
	seen map[string]int
}

func (w keyCounter) Acquire(_ context.Context, key string) (bool, error) {
	w.mu.Lock()
	w.seen[key]++
	w.mu.Unlock()
	return true, nil
}
func (w keyCounter) Extend(context.Context) (bool, error) { return true, nil }
func (w keyCounter) Release(context.Context) error        { return nil }
func (w keyCounter) NodeErrors() map[string]int64         { return nil }
func (w keyCounter) Close() error                         { return nil }

type countStrategy struct{ w keyCounter }

func (s countStrategy) Name() string                                   { return "count" }
func (s countStrategy) NewWorker(context.Context) (load.Worker, error) { return s.w, nil }
func (s countStrategy) Close() error                                   { return nil }

// Issue 12 item 6: -keys-dist zipf:1.1 makes a few keys hot. Over 100 keys
// the hottest draws about a quarter of the operations (1/H(100, 1.1));
// round-robin and uniform give each about 1%.
func TestZipfKeysAreSkewed(t *testing.T) {
	hottest := func(d load.KeyDist) float64 {
		w := keyCounter{mu: &sync.Mutex{}, seen: map[string]int{}}
		res, err := runStrategy(context.Background(), countStrategy{w}, load.RunConfig{Workers: 4, Ops: 20000, Keys: 100,
			Workload: load.WorkloadAcquireRelease, KeyDist: d, Prefix: "z:"}, nil, nil)
		require.NoError(t, err)
		require.Equal(t, int64(20000), res.Ops)
		top := 0
		for _, n := range w.seen {
			top = max(top, n)
		}
		return float64(top) / 20000
	}
	require.Greater(t, hottest(load.KeyDist{Kind: load.KeysZipf, S: 1.1}), 0.15)
	require.Less(t, hottest(load.KeyDist{Kind: load.KeysUniform}), 0.03)
	require.Less(t, hottest(load.KeyDist{Kind: load.KeysRoundRobin}), 0.03)
}

// -hold keeps each lock for the given time: acquire+release latency is at
// least the hold (a lower bound: a slow machine cannot make it fail).
func TestHoldIsInsideTheLock(t *testing.T) {
	res, err := runStrategy(context.Background(), sleepStrategy{0}, load.RunConfig{Workers: 2, Duration: 300 * time.Millisecond, Keys: 10,
		Workload: load.WorkloadAcquireRelease, Hold: load.Hold{Kind: "fixed", A: 20 * time.Millisecond}}, nil, nil)
	require.NoError(t, err)
	require.Positive(t, res.Acquired)
	require.GreaterOrEqual(t, res.AcquireRelease.MinUs, 20000.0*0.999)
	// 2 workers holding 20ms each cannot complete more than 2*300/20 = 30
	// operations (plus one in flight each).
	require.LessOrEqual(t, res.Ops, int64(32))
}

// The contended report: one key, every worker fighting for it, each holding
// it 5ms. Redlock's mutual exclusion allows at most one holder at a time, so
// hand-offs are at most one per 5ms; every other attempt is refused. The
// report says how many attempts a hand-off took.
func TestContendedReportsHandoffs(t *testing.T) {
	dir := t.TempDir()
	rep, stdout, _ := runArgs(t, []string{"-fake", "3", "-strategy", "mux", "-workload", "contended", "-hold", "5ms", "-c", "8",
		"-d", "600ms", "-warmup", "100ms", "-timeout", "500ms", "-out", dir}, false)
	s := rep.Strategies[0]
	require.Positive(t, s.Acquired)
	require.Positive(t, s.NotAcquired, "8 workers on one key: most attempts are refused")
	require.Greater(t, s.Ops, s.Acquired)
	require.LessOrEqual(t, s.AcquiredPerSec, 1/0.005*1.05+2, "hand-offs/s over one key held 5ms each: %v", s.AcquiredPerSec)
	require.Contains(t, stdout, "acquired/s")
	require.Contains(t, stdout, "hold 5ms")
	md := readFile(t, dir+"/"+fileReport)
	for _, want := range []string{"### Contention", "hand-offs/s", "attempts per hand-off", "busy", "hold inside the lock (-hold)"} {
		require.Contains(t, md, want)
	}
	var b bytes.Buffer
	require.NoError(t, WriteJSON(&b, rep))
	require.True(t, strings.Contains(b.String(), `"acquired_per_sec"`) && strings.Contains(b.String(), `"hold": "5ms"`), b.String()[:200])
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}
