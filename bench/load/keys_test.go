package load

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// -hold and -keys-dist as bench's flags parse them.
func TestParseHoldAndKeyDist(t *testing.T) {
	for in, want := range map[string]Hold{
		"0": {}, "5ms": {Kind: "fixed", A: 5 * time.Millisecond}, "uniform:1ms:3ms": {Kind: "uniform", A: time.Millisecond, B: 3 * time.Millisecond},
		"exp:2ms": {Kind: "exp", A: 2 * time.Millisecond},
	} {
		h, err := ParseHold(in)
		require.NoError(t, err, in)
		require.Equal(t, want, h, in)
		if in != "0" {
			require.Equal(t, in, h.String())
		}
	}
	// Each bad value's error names what is wrong with it, beside the forms expected.
	for bad, why := range map[string]string{
		"5": `"5" has no unit (write 5ms)`, "-1ms": "-1ms is negative",
		"uniform:5ms:1ms": "min 5ms is above max 1ms (write uniform:1ms:5ms)",
		"uniform:1ms":     "uniform takes two durations, <min>:<max>, got 1",
		"uniform:0:0":     "max is 0", "uniform:1ms:x": `max "x" is not a duration`,
		"exp:0s": "the mean is 0", "exp:x": `mean "x" is not a duration`,
		"normal:1ms": `unknown distribution "normal"`, "2m": "2m0s is above the longest hold, 1m0s",
	} {
		_, err := ParseHold(bad)
		require.Error(t, err, bad)
		require.Contains(t, err.Error(), why, bad)
		require.Contains(t, err.Error(), "want a duration (5ms), uniform:<min>:<max> or exp:<mean>", bad)
	}
	for in, want := range map[string]KeyDist{"round-robin": {Kind: KeysRoundRobin}, "uniform": {Kind: KeysUniform}, "zipf:1.1": {Kind: KeysZipf, S: 1.1}} {
		d, err := ParseKeyDist(in)
		require.NoError(t, err, in)
		require.Equal(t, want, d)
		require.Equal(t, in, d.String())
	}
	for _, bad := range []string{"zipf", "zipf:1", "zipf:0.5", "zipf:x", "random"} {
		_, err := ParseKeyDist(bad)
		require.Error(t, err, bad)
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

// workersOf is n workers that are all w.
func workersOf(w Worker, n int) []Worker {
	ws := make([]Worker, n)
	for i := range ws {
		ws[i] = w
	}
	return ws
}

// Issue 12 item 6: -keys-dist zipf:1.1 makes a few keys hot. Over 100 keys
// the hottest draws about a quarter of the operations (1/H(100, 1.1));
// round-robin and uniform give each about 1%.
func TestZipfKeysAreSkewed(t *testing.T) {
	hottest := func(d KeyDist) float64 {
		w := keyCounter{mu: &sync.Mutex{}, seen: map[string]int{}}
		r, err := Measure(context.Background(), "count", workersOf(w, 4), RunConfig{Workers: 4, Ops: 20000, Keys: 100,
			Workload: WorkloadAcquireRelease, KeyDist: d, Prefix: "z:"}, nil, nil)
		require.NoError(t, err)
		require.Equal(t, int64(20000), r.Ops)
		top := 0
		for _, n := range w.seen {
			top = max(top, n)
		}
		return float64(top) / 20000
	}
	require.Greater(t, hottest(KeyDist{Kind: KeysZipf, S: 1.1}), 0.15)
	require.Less(t, hottest(KeyDist{Kind: KeysUniform}), 0.03)
	require.Less(t, hottest(KeyDist{Kind: KeysRoundRobin}), 0.03)
}

// -hold keeps each lock for the given time: acquire+release latency is at
// least the hold (a lower bound: a slow machine cannot make it fail).
func TestHoldIsInsideTheLock(t *testing.T) {
	w := keyCounter{mu: &sync.Mutex{}, seen: map[string]int{}}
	r, err := Measure(context.Background(), "count", workersOf(w, 2), RunConfig{Workers: 2, Duration: 300 * time.Millisecond, Keys: 10,
		Workload: WorkloadAcquireRelease, Hold: Hold{Kind: "fixed", A: 20 * time.Millisecond}}, nil, nil)
	require.NoError(t, err)
	require.Positive(t, r.Acquired)
	require.GreaterOrEqual(t, r.Hists[MAcquireRelease].Min(), int64(float64(20*time.Millisecond)*0.999))
	// 2 workers holding 20ms each cannot complete more than 2*300/20 = 30
	// operations (plus one in flight each).
	require.LessOrEqual(t, r.Ops, int64(32))
}

// Issue 12 item 2: percentiles follow HdrHistogram's ceiling rank (as its
// Java tools compute them), by hand on 70 values 1ms..70ms.
func TestPercentileIsCeilingRank(t *testing.T) {
	h := NewHistogram()
	for i := 1; i <= 70; i++ {
		Record(h, time.Duration(i)*time.Millisecond)
	}
	// rank = ceil(p/100*70) (p lowered by one ulp), value = the highest
	// value equivalent to the rank-th value (i ms).
	hand := map[float64]int{50: 35, 90: 63, 99: 70, 98: 69, 97: 68, 95: 67, 1: 1, 0.5: 1, 60: 42, 100: 70}
	// 97% of 70 = 67.9 -> 68 (rounding to nearest also gives 68); 99% =
	// 69.3 -> 70 (rounding gives 69); 95% = 66.5 -> 67.
	for p, rank := range hand {
		want := highestEq(int64(rank) * int64(time.Millisecond))
		require.Equal(t, want, ValueAtPercentile(h, p), "p%v = value of rank %d", p, rank)
	}
	// 55% of 100 is 55.00000000000001 in floating point: rank 55, not 56.
	h100 := NewHistogram()
	for i := 1; i <= 100; i++ {
		Record(h100, time.Duration(i)*time.Millisecond)
	}
	require.Equal(t, highestEq(55e6), ValueAtPercentile(h100, 55))
	require.Equal(t, highestEq(100e6), ValueAtPercentile(h100, 99.5))
	require.Zero(t, ValueAtPercentile(NewHistogram(), 99))
	require.Equal(t, lowestEq(1e6), ValueAtPercentile(h, 0))
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
