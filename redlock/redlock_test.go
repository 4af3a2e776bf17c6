package redlock_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redmux/redmux/internal/lockrule"
	"github.com/redmux/redmux/mux"
	"github.com/redmux/redmux/redlock"
)

// Steps 1, 2 and 4: SET NX PX on all nodes, validity from the monotonic
// clock = ttl - elapsed - drift.
func TestAcquireSetsKeyOnEveryNode(t *testing.T) {
	cl := startCluster(t, 5)
	addrs := cl.Addrs()
	c := newClient(t, addrs)
	ctx := context.Background()
	const ttl = 2 * time.Second
	before := time.Now()
	l, err := c.Acquire(ctx, "res", redlock.WithTTL(ttl))
	require.NoError(t, err)
	elapsed := time.Since(before)

	require.Equal(t, "res", l.Resource())
	v := l.ValueArray()
	require.Equal(t, v[:], l.Value())
	require.Len(t, l.Value(), redlock.ValueSize)
	require.GreaterOrEqual(t, count(holders(t, addrs, "res", l.Value())), 3, "a quorum holds the value")
	eventually(t, time.Second, func() bool { return count(holders(t, addrs, "res", l.Value())) == 5 },
		"every node gets the SET")
	for i, n := range cl.Nodes {
		p := n.PTTL("res")
		require.True(t, p > ttl-500*time.Millisecond && p <= ttl, "node %d PTTL %v", i, p)
	}
	drift := lockrule.Drift(ttl, redlock.DefaultDriftFactor, redlock.DefaultDriftFixed)
	val := l.Validity()
	require.LessOrEqual(t, val, ttl-drift, "validity is at most ttl - drift")
	require.Greater(t, val, ttl-drift-elapsed-50*time.Millisecond)
	require.WithinDuration(t, time.Now().Add(val), l.Until(), 20*time.Millisecond)
	require.Equal(t, ttl, l.TTL())
	require.Contains(t, l.String(), `"res"`)
	require.NoError(t, l.Release(ctx))
	require.Equal(t, 0, count(holders(t, addrs, "res", v[:])))
	require.Zero(t, l.Validity())
}

// Step 4: elapsed time is subtracted from the validity.
func TestValiditySubtractsElapsed(t *testing.T) {
	cl := startCluster(t, 5)
	for _, n := range cl.Nodes {
		n.SetLatency(40*time.Millisecond, 0)
	}
	c := newClient(t, cl.Addrs(), redlock.WithNodeTimeout(500*time.Millisecond))
	const ttl = time.Second
	l, err := c.TryAcquire(context.Background(), "slow", redlock.WithTTL(ttl))
	require.NoError(t, err)
	drift := time.Duration(float64(ttl)*0.01) + 2*time.Millisecond
	require.LessOrEqual(t, l.Validity(), ttl-drift-40*time.Millisecond)
	require.NoError(t, l.Release(context.Background()))
}

// Step 3: quorum of N/2+1; refusals counted; the failed attempt is released
// on all nodes.
func TestQuorum(t *testing.T) {
	cl := startCluster(t, 5)
	addrs := cl.Addrs()
	c := newClient(t, addrs)
	ctx := context.Background()
	require.Equal(t, 3, c.Quorum())
	require.Equal(t, 5, c.N())

	setForeign(t, addrs, "two", 0, 1)
	l, err := c.TryAcquire(ctx, "two")
	require.NoError(t, err, "3 of 5 is a quorum")
	require.Equal(t, 3, count(holders(t, addrs, "two", l.Value())))
	require.NoError(t, l.Release(ctx))

	setForeign(t, addrs, "three", 0, 1, 2)
	_, err = c.TryAcquire(ctx, "three")
	require.ErrorIs(t, err, redlock.ErrNotAcquired)
	var na *redlock.NotAcquiredError
	require.ErrorAs(t, err, &na)
	require.Equal(t, 1, na.Tries)
	require.Equal(t, 3, na.Refused)
	require.Equal(t, 0, na.Failed)
	require.LessOrEqual(t, na.Granted, 2)
	require.False(t, na.TooShort)
	require.NotErrorIs(t, err, redlock.ErrValidityTooShort)
	require.Contains(t, err.Error(), `"three"`)
	// Step 5: released on all nodes: only the foreign values remain.
	eventually(t, time.Second, func() bool {
		for i := 3; i < 5; i++ {
			if _, ok := cl.Nodes[i].Get("three"); ok {
				return false
			}
		}
		return true
	}, "the granted nodes were not released")
	for i := 0; i < 3; i++ {
		v, ok := cl.Nodes[i].Get("three")
		require.True(t, ok)
		require.Equal(t, "someone-else", string(v))
	}
}

func TestQuorumOption(t *testing.T) {
	cl := startCluster(t, 5)
	addrs := cl.Addrs()
	for _, q := range []int{-1, 1, 2, 6} {
		_, err := redlock.New(addrs, redlock.WithQuorum(q))
		require.ErrorIs(t, err, redlock.ErrBadOption, "quorum %d", q)
	}
	c := newClient(t, addrs, redlock.WithQuorum(5))
	setForeign(t, addrs, "all", 4)
	_, err := c.TryAcquire(context.Background(), "all")
	var na *redlock.NotAcquiredError
	require.ErrorAs(t, err, &na)
	require.Equal(t, 1, na.Refused)
	require.Equal(t, 4, na.Granted+na.Failed+na.Pending, "all others granted or were not needed")
}

// Step 5 with failed and slow nodes: the release goes to all N, also to
// the nodes that timed out.
func TestFailedAttemptReleasesOnAllNodes(t *testing.T) {
	cl := startCluster(t, 5)
	addrs := cl.Addrs()
	c := newClient(t, addrs, redlock.WithNodeTimeout(30*time.Millisecond))
	warm(t, c)
	setForeign(t, addrs, "k", 0, 1)
	cl.Nodes[2].FailNext(1, "ERR injected")
	cl.Nodes[3].SetLatency(150*time.Millisecond, 0) // executes, answers too late
	_, err := c.TryAcquire(context.Background(), "k")
	var na *redlock.NotAcquiredError
	require.ErrorAs(t, err, &na)
	require.Equal(t, 2, na.Refused)
	require.GreaterOrEqual(t, na.Failed, 1)
	require.LessOrEqual(t, na.Granted, 2)
	// node 3 executed the SET at once and node 4 granted it: both must
	// have been released.
	eventually(t, 2*time.Second, func() bool {
		_, ok3 := cl.Nodes[3].Get("k")
		_, ok4 := cl.Nodes[4].Get("k")
		return !ok3 && !ok4
	}, "nodes 3 and 4 still hold the failed attempt's value")
}

// Step 3: a quorum with too little validity left is not acquired.
func TestValidityTooShort(t *testing.T) {
	cl := startCluster(t, 5)
	c := newClient(t, cl.Addrs(), redlock.WithNodeTimeout(time.Second))
	warm(t, c)
	for _, n := range cl.Nodes {
		n.SetLatency(60*time.Millisecond, 0)
	}
	_, err := c.TryAcquire(context.Background(), "short",
		redlock.WithTTL(100*time.Millisecond), redlock.WithMinValidity(50*time.Millisecond))
	require.ErrorIs(t, err, redlock.ErrNotAcquired)
	require.ErrorIs(t, err, redlock.ErrValidityTooShort)
	var na *redlock.NotAcquiredError
	require.ErrorAs(t, err, &na)
	require.True(t, na.TooShort)
	require.GreaterOrEqual(t, na.Granted, 3)
	eventually(t, 2*time.Second, func() bool {
		for _, n := range cl.Nodes {
			if _, ok := n.Get("short"); ok {
				return false
			}
		}
		return true
	}, "a too-short acquisition was not released")
}

// Step 5: retries are bounded by tries, spaced by the random delay, and
// succeed once the holder releases.
func TestRetry(t *testing.T) {
	cl := startCluster(t, 5)
	addrs := cl.Addrs()
	holder := newClient(t, addrs)
	c := newClient(t, addrs)
	ctx := context.Background()
	h, err := holder.Acquire(ctx, "r")
	require.NoError(t, err)

	start := time.Now()
	_, err = c.Acquire(ctx, "r", redlock.WithTries(3), redlock.WithRetryDelay(20*time.Millisecond, 30*time.Millisecond))
	el := time.Since(start)
	var na *redlock.NotAcquiredError
	require.ErrorAs(t, err, &na)
	require.Equal(t, 3, na.Tries)
	require.GreaterOrEqual(t, na.Refused, 3)
	require.GreaterOrEqual(t, el, 40*time.Millisecond, "two retry delays of at least 20ms")
	require.Less(t, el, 3*(2*redlock.DefaultNodeTimeout)+2*30*time.Millisecond+time.Second)

	_, err = c.TryAcquire(ctx, "r")
	require.ErrorAs(t, err, &na)
	require.Equal(t, 1, na.Tries)

	go func() {
		time.Sleep(60 * time.Millisecond)
		_ = h.Release(ctx)
	}()
	l, err := c.Acquire(ctx, "r", redlock.WithTries(200), redlock.WithRetryDelay(5*time.Millisecond, 15*time.Millisecond))
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))
}

// Step 5: Acquire stops when ctx is done, and reports the cause.
func TestAcquireContext(t *testing.T) {
	cl := startCluster(t, 5)
	addrs := cl.Addrs()
	c := newClient(t, addrs)
	setForeign(t, addrs, "ctx", 0, 1, 2, 3, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 80*time.Millisecond)
	defer cancel()
	_, err := c.Acquire(ctx, "ctx", redlock.WithTries(1000000))
	require.ErrorIs(t, err, redlock.ErrNotAcquired)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	// Ended by ctx, not by running out of tries (counted, not timed).
	var nae *redlock.NotAcquiredError
	require.ErrorAs(t, err, &nae)
	require.Less(t, nae.Tries, 1000000, "%+v", nae)

	done, cancel2 := context.WithCancel(context.Background())
	cancel2()
	_, err = c.Acquire(done, "ctx")
	require.ErrorIs(t, err, context.Canceled)
	var na *redlock.NotAcquiredError
	require.ErrorAs(t, err, &na)
	require.Equal(t, 0, na.Tries)
}

func TestReleaseKeepsOtherOwnersKeys(t *testing.T) {
	cl := startCluster(t, 5)
	addrs := cl.Addrs()
	c := newClient(t, addrs)
	ctx := context.Background()
	l, err := c.Acquire(ctx, "mine")
	require.NoError(t, err)
	waitAllHold(t, addrs, "mine", l)
	setForeign(t, addrs, "mine", 0) // node 0 now holds another value
	require.NoError(t, l.Release(ctx))
	v, ok := cl.Nodes[0].Get("mine")
	require.True(t, ok, "compare-and-delete must not delete another owner's key")
	require.Equal(t, "someone-else", string(v))
	for i := 1; i < 5; i++ {
		_, ok := cl.Nodes[i].Get("mine")
		require.False(t, ok)
	}
	require.ErrorIs(t, l.Release(ctx), redlock.ErrNotHeld)
	require.ErrorIs(t, l.Extend(ctx, time.Second), redlock.ErrNotHeld)
}

// TestReleasePartial: a Release that a quorum confirmed returns nil (the
// lock is free for others), and with WithStrictRelease(true) a
// *ReleaseError that names the nodes that did not confirm. With fewer than
// a quorum confirming it is an error either way.
func TestReleasePartial(t *testing.T) {
	cl := startCluster(t, 5)
	addrs := cl.Addrs()
	// The node timeout only bounds the wait for the blackholed node: long
	// enough that the three healthy nodes answer within it on a loaded
	// -race run (40 ms failed there once).
	c := newClient(t, addrs, redlock.WithNodeTimeout(300*time.Millisecond))
	warm(t, c)
	ctx := context.Background()
	// Each part takes its own key: commands of the first part still in
	// flight (the SETs of the TryAcquire below that came after its quorum,
	// the release held by node 4's blackhole) cannot touch the second's.
	partly := func(key string, opts ...redlock.LockOption) (redlock.Lock, error) {
		t.Helper()
		l, err := c.Acquire(ctx, key, opts...)
		require.NoError(t, err)
		// Acquire returns at quorum: wait for the other SET replies so that
		// FailNext below hits the release, not a SET reply still in flight.
		waitAllHold(t, addrs, key, l)
		cl.Nodes[4].Blackhole()
		cl.Nodes[1].FailNext(1, "ERR nope")
		err = l.Release(ctx)
		cl.Nodes[4].Heal()
		return l, err
	}
	l, err := partly("p")
	require.NoError(t, err, "3 of 5 released: the lock is free")
	require.False(t, l.Held())
	require.Zero(t, l.Validity())
	eventually(t, 2*time.Second, func() bool {
		_, err := c.TryAcquire(ctx, "p")
		return err == nil
	}, "another holder can take it") // at least 4 of 5 are free (node 4's release ran when it healed, or its key lives out its TTL)

	l, err = partly("p2", redlock.WithStrictRelease(true))
	require.ErrorIs(t, err, redlock.ErrReleasePartial)
	var re *redlock.ReleaseError
	require.ErrorAs(t, err, &re)
	require.Equal(t, []int{1, 4}, re.Failed)
	require.Equal(t, 3, re.Released)
	require.Len(t, re.Errs, 2)
	require.ErrorIs(t, err, mux.ErrServer, "node 1's error reply is reachable")
	require.Contains(t, err.Error(), "[1 4]")
	require.Zero(t, l.Validity(), "released even if partly")
}

func TestReleaseAfterExpiry(t *testing.T) {
	cl := startCluster(t, 5)
	c := newClient(t, cl.Addrs())
	l, err := c.Acquire(context.Background(), "e", redlock.WithTTL(40*time.Millisecond))
	require.NoError(t, err)
	time.Sleep(60 * time.Millisecond)
	require.Zero(t, l.Validity())
	err = l.Release(context.Background())
	require.ErrorIs(t, err, redlock.ErrLockExpired)
	require.NotErrorIs(t, err, redlock.ErrReleasePartial)
}

func TestReleaseLost(t *testing.T) {
	cl := startCluster(t, 5)
	addrs := cl.Addrs()
	c := newClient(t, addrs)
	l, err := c.Acquire(context.Background(), "lost")
	require.NoError(t, err)
	waitAllHold(t, addrs, "lost", l)
	for i := 0; i < 3; i++ {
		rawDo(t, addrs[i], "DEL", "lost")
	}
	err = l.Release(context.Background())
	require.ErrorIs(t, err, redlock.ErrLockLost)
}

// A Release with a ctx already cancelled is still sent (issue 21; before,
// it returned ctx's error and kept the lock): see contract_test.go.
func TestReleaseContextDoneStillReleases(t *testing.T) {
	cl := startCluster(t, 5)
	c := newClient(t, cl.Addrs())
	l, err := c.Acquire(context.Background(), "keep")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.NoError(t, l.Release(ctx))
	require.False(t, l.Held())
	require.ErrorIs(t, l.Release(context.Background()), redlock.ErrNotHeld)
}

func TestExtend(t *testing.T) {
	cl := startCluster(t, 5)
	c := newClient(t, cl.Addrs())
	ctx := context.Background()
	l, err := c.Acquire(ctx, "x", redlock.WithTTL(300*time.Millisecond), redlock.WithMaxExtensions(2))
	require.NoError(t, err)
	copyBefore := l
	require.NoError(t, l.Extend(ctx, 3*time.Second))
	require.Equal(t, 1, l.Extensions())
	require.Greater(t, l.Validity(), 2*time.Second)
	require.Greater(t, copyBefore.Validity(), 2*time.Second, "a copy is the same lock: it sees the extension")
	eventually(t, time.Second, func() bool {
		for _, n := range cl.Nodes {
			if n.PTTL("x") < 2*time.Second {
				return false
			}
		}
		return true
	}, "not every node extended")
	require.NoError(t, l.Extend(ctx, 3*time.Second))
	require.ErrorIs(t, l.Extend(ctx, 3*time.Second), redlock.ErrExtendLimit)
	require.Equal(t, 2, l.Extensions())
	require.ErrorIs(t, l.Extend(ctx, 0), redlock.ErrBadOption)
	require.NoError(t, l.Release(ctx))
}

func TestExtendAfterExpiry(t *testing.T) {
	cl := startCluster(t, 5)
	c := newClient(t, cl.Addrs())
	l, err := c.Acquire(context.Background(), "xe", redlock.WithTTL(30*time.Millisecond))
	require.NoError(t, err)
	time.Sleep(40 * time.Millisecond)
	err = l.Extend(context.Background(), time.Second)
	require.ErrorIs(t, err, redlock.ErrLockExpired)
	var ee *redlock.ExtendError
	require.ErrorAs(t, err, &ee)
	require.True(t, ee.Expired)
	require.Zero(t, l.Validity())
}

// The quorum must agree within the remaining validity.
func TestExtendQuorumTooLate(t *testing.T) {
	cl := startCluster(t, 5)
	c := newClient(t, cl.Addrs(), redlock.WithNodeTimeout(time.Second))
	l, err := c.Acquire(context.Background(), "late", redlock.WithTTL(200*time.Millisecond))
	require.NoError(t, err)
	for l.Validity() > 60*time.Millisecond {
		time.Sleep(5 * time.Millisecond)
	}
	for _, n := range cl.Nodes {
		n.SetLatency(150*time.Millisecond, 0)
	}
	err = l.Extend(context.Background(), 5*time.Second)
	require.ErrorIs(t, err, redlock.ErrLockExpired)
	// The wait is bounded by the remaining validity (under 60ms), not by
	// the nodes (150ms each): Extend returned with every node pending.
	var ee *redlock.ExtendError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, len(cl.Nodes), ee.Pending, "no node had answered: %+v", ee)
	require.Zero(t, l.Validity())
}

func TestExtendLost(t *testing.T) {
	cl := startCluster(t, 5)
	addrs := cl.Addrs()
	c := newClient(t, addrs)
	l, err := c.Acquire(context.Background(), "xl")
	require.NoError(t, err)
	waitAllHold(t, addrs, "xl", l)
	for i := 0; i < 3; i++ {
		rawDo(t, addrs[i], "DEL", "xl")
	}
	err = l.Extend(context.Background(), time.Minute)
	require.ErrorIs(t, err, redlock.ErrLockLost)
	var ee *redlock.ExtendError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, 3, ee.Refused)
	require.LessOrEqual(t, ee.Extended, 2)
	require.Zero(t, l.Validity(), "known lost: no validity left")
}

// A failed extension leaves the validity as it was: never longer (the
// nodes that missed it keep the old expiry), never shorter (the nodes never
// shorten a key).
func TestExtendFailureNeverLengthens(t *testing.T) {
	cl := startCluster(t, 5)
	addrs := cl.Addrs()
	c := newClient(t, addrs, redlock.WithNodeTimeout(30*time.Millisecond))
	l, err := c.Acquire(context.Background(), "xs", redlock.WithTTL(10*time.Second))
	require.NoError(t, err)
	for i := 0; i < 3; i++ {
		cl.Nodes[i].Blackhole()
	}
	before := l.Until()
	err = l.Extend(context.Background(), 20*time.Second)
	for i := 0; i < 3; i++ {
		cl.Nodes[i].Heal()
	}
	require.ErrorIs(t, err, redlock.ErrExtendUnknown)
	require.Equal(t, before, l.Until(), "a failed Extend keeps the validity it had")
	require.Positive(t, l.Validity())
}

func TestValuesUnique(t *testing.T) {
	cl := startCluster(t, 5)
	c := newClient(t, cl.Addrs())
	ctx := context.Background()
	seen := make(map[[redlock.ValueSize]byte]bool)
	var zero [redlock.ValueSize]byte
	for i := 0; i < 300; i++ {
		l, err := c.TryAcquire(ctx, "u")
		require.NoError(t, err)
		v := l.ValueArray()
		require.NotEqual(t, zero, v)
		require.False(t, seen[v], "value repeated")
		seen[v] = true
		require.NoError(t, l.Release(ctx))
	}
}

// lockedReader makes a reader safe for concurrent use.
type lockedReader struct {
	mu sync.Mutex
	r  io.Reader
}

func (l *lockedReader) Read(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Read(p)
}

func TestValueSource(t *testing.T) {
	cl := startCluster(t, 5)
	src := bytes.Repeat([]byte("0123456789abcdefghij"), 1)
	c := newClient(t, cl.Addrs(), redlock.WithValueSource(&lockedReader{r: bytes.NewReader(src)}))
	ctx := context.Background()
	l, err := c.TryAcquire(ctx, "vs")
	require.NoError(t, err)
	require.Equal(t, src, l.Value())
	waitAllHold(t, cl.Addrs(), "vs", l) // Acquire returns at quorum; node 0 may still be executing
	v, _ := cl.Nodes[0].Get("vs")
	require.Equal(t, src, v)
	require.NoError(t, l.Release(ctx))
	_, err = c.TryAcquire(ctx, "vs") // source exhausted
	require.ErrorIs(t, err, redlock.ErrNotAcquired)
	require.ErrorIs(t, err, io.EOF)
}

func TestOptionValidation(t *testing.T) {
	cl := startCluster(t, 3)
	addrs := cl.Addrs()
	bad := []redlock.Option{
		redlock.WithTTL(0),
		redlock.WithTTL(-time.Second),
		redlock.WithTTL(2000 * time.Hour),
		redlock.WithTries(0),
		redlock.WithRetryDelay(-1, 0),
		redlock.WithRetryDelay(time.Second, time.Millisecond),
		redlock.WithDriftFactor(1),
		redlock.WithDriftFactor(-0.1),
		redlock.WithFixedDrift(-time.Millisecond),
		redlock.WithNodeTimeout(0),
		redlock.WithMaxExtensions(-1),
		redlock.WithMinValidity(-1),
		redlock.WithMinValidity(time.Minute), // more than the default TTL
		nil,
	}
	for i, o := range bad {
		_, err := redlock.New(addrs, o)
		require.ErrorIs(t, err, redlock.ErrBadOption, "option %d", i)
	}
	_, err := redlock.New(nil)
	require.ErrorIs(t, err, redlock.ErrBadOption)
	_, err = redlock.NewWithMux(nil)
	require.ErrorIs(t, err, redlock.ErrBadOption)

	c := newClient(t, addrs)
	_, err = c.TryAcquire(context.Background(), "k", redlock.WithTTL(0))
	require.ErrorIs(t, err, redlock.ErrBadOption)
	_, err = c.Acquire(context.Background(), "")
	require.ErrorIs(t, err, redlock.ErrBadOption)
}

func TestServerErrorsCountAsFailed(t *testing.T) {
	cl := startCluster(t, 5)
	c := newClient(t, cl.Addrs())
	warm(t, c)
	ctx := context.Background()
	cl.Nodes[0].FailNext(1, "ERR injected")
	cl.Nodes[1].FailNext(1, "ERR injected")
	l, err := c.TryAcquire(ctx, "se")
	require.NoError(t, err, "3 of 5 still grant")
	require.NoError(t, l.Release(ctx))
	for i := 0; i < 3; i++ {
		cl.Nodes[i].FailNext(1, "ERR injected")
	}
	_, err = c.TryAcquire(ctx, "se")
	var na *redlock.NotAcquiredError
	require.ErrorAs(t, err, &na)
	require.Equal(t, 0, na.Refused)
	require.GreaterOrEqual(t, na.Failed, 3)
}

// After a restart that loses the script cache, EVALSHA gets NOSCRIPT and
// mux falls back to EVAL: release and extend still work.
func TestScriptCacheLost(t *testing.T) {
	cl := startCluster(t, 5)
	addrs := cl.Addrs()
	c := newClient(t, addrs)
	ctx := context.Background()
	l, err := c.Acquire(ctx, "sc")
	require.NoError(t, err)
	waitAllHold(t, addrs, "sc", l) // every SET executed, so none can land after the release
	for _, a := range addrs {
		require.True(t, rawDo(t, a, "SCRIPT", "FLUSH").IsOK())
	}
	require.NoError(t, l.Extend(ctx, 5*time.Second))
	for _, a := range addrs {
		require.True(t, rawDo(t, a, "SCRIPT", "FLUSH").IsOK())
	}
	require.NoError(t, l.Release(ctx))
	for i, n := range cl.Nodes {
		_, ok := n.Get("sc")
		require.False(t, ok, "node %d", i)
	}
}

func TestClosed(t *testing.T) {
	cl := startCluster(t, 5)
	c, err := redlock.New(cl.Addrs())
	require.NoError(t, err)
	ctx := context.Background()
	l, err := c.Acquire(ctx, "cl")
	require.NoError(t, err)
	require.NoError(t, c.Close())
	require.NoError(t, c.Close())
	_, err = c.Acquire(ctx, "cl2")
	require.ErrorIs(t, err, redlock.ErrClosed)
	require.ErrorIs(t, err, redlock.ErrNotAcquired)
	require.ErrorIs(t, l.Extend(ctx, time.Second), redlock.ErrClosed)
	require.Error(t, l.Release(ctx))
}

func TestZeroLock(t *testing.T) {
	var l redlock.Lock
	require.Zero(t, l.Validity())
	require.True(t, l.Until().IsZero())
	require.ErrorIs(t, l.Release(context.Background()), redlock.ErrNotHeld)
	require.ErrorIs(t, l.Extend(context.Background(), time.Second), redlock.ErrNotHeld)
	require.Contains(t, l.String(), "not held")
}

// MuxConfig adds what the lock needs and keeps the rest of the caller's
// config: its own scripts (a lock script it already lists kept once), its
// reconnect cap, its addresses and timeout.
func TestMuxConfig(t *testing.T) {
	all := redlock.MuxScripts()
	require.NotEmpty(t, all)
	c := redlock.MuxConfig(mux.Config{})
	require.True(t, c.Incarnations)
	require.True(t, c.WatchFlushes)
	require.Equal(t, redlock.DefaultReconnectMax, c.ReconnectMax)
	require.ElementsMatch(t, all, c.Scripts)

	own := mux.Script{Text: "return 1", SHA: "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"}
	in := mux.Config{
		Addrs: []string{"127.0.0.1:1"}, Timeout: 7 * time.Millisecond, ReconnectMax: time.Minute,
		Scripts: []mux.Script{own, all[0]},
	}
	c = redlock.MuxConfig(in)
	require.Equal(t, in.Addrs, c.Addrs)
	require.Equal(t, in.Timeout, c.Timeout)
	require.Equal(t, time.Minute, c.ReconnectMax)
	require.ElementsMatch(t, append([]mux.Script{own}, all...), c.Scripts)
	require.Len(t, in.Scripts, 2, "the caller's slice is not written")
}

func TestNewWithMux(t *testing.T) {
	cl := startCluster(t, 3)
	m, err := mux.New(mux.Config{Addrs: cl.Addrs(), Scripts: redlock.MuxScripts()})
	require.NoError(t, err)
	defer m.Close()
	c, err := redlock.NewWithMux(m, redlock.WithTTL(time.Second))
	require.NoError(t, err)
	ctx := context.Background()
	l, err := c.Acquire(ctx, "wm")
	require.NoError(t, err)
	require.Equal(t, time.Second, l.TTL())
	require.NoError(t, l.Release(ctx))
	require.NoError(t, c.Close())
	_, err = c.Acquire(ctx, "wm")
	require.ErrorIs(t, err, redlock.ErrClosed)
	// the mux client is the caller's and still works
	c2, err := redlock.NewWithMux(m)
	require.NoError(t, err)
	l, err = c2.Acquire(ctx, "wm")
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))
}

// Mutual exclusion between concurrent goroutines of one client and of
// several clients.
func TestConcurrentMutualExclusion(t *testing.T) {
	cl := startCluster(t, 5)
	addrs := cl.Addrs()
	clients := []*redlock.Client{newClient(t, addrs), newClient(t, addrs)}
	var inside, acquired, overlaps atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 6; g++ {
		wg.Add(1)
		go func(c *redlock.Client) {
			defer wg.Done()
			ctx := context.Background()
			for i := 0; i < 40; i++ {
				l, err := c.Acquire(ctx, "mx", redlock.WithTries(3), redlock.WithRetryDelay(time.Millisecond, 3*time.Millisecond))
				if err != nil {
					if !errors.Is(err, redlock.ErrNotAcquired) {
						overlaps.Add(1000) // unexpected error kind
					}
					continue
				}
				acquired.Add(1)
				if inside.Add(1) != 1 {
					overlaps.Add(1)
				}
				time.Sleep(100 * time.Microsecond)
				inside.Add(-1)
				_ = l.Release(ctx)
			}
		}(clients[g%2])
	}
	wg.Wait()
	assert.Zero(t, overlaps.Load())
	assert.Positive(t, acquired.Load())
}

// D1, revised (issue 21): an Extend to a shorter TTL never shortens the
// keys on the nodes, whether it succeeds or its ctx ends after the
// PEXPIREs were written: a shorter PEXPIRE delayed in the network could
// otherwise land after a later extension and cut its keys short. A
// success gives the shorter validity; a failure keeps the old one, and
// its error counts the replies that did arrive.
func TestExtendNeverShortensKeys(t *testing.T) {
	for _, tc := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want error
	}{
		{"success", func() (context.Context, context.CancelFunc) {
			return context.WithCancel(context.Background())
		}, nil},
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 30*time.Millisecond)
		}, context.DeadlineExceeded},
		{"cancel", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(30*time.Millisecond, cancel)
			return ctx, cancel
		}, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := startCluster(t, 5)
			addrs := cl.Addrs()
			c := newClient(t, addrs, redlock.WithNodeTimeout(time.Second))
			l, err := c.Acquire(context.Background(), "xd1", redlock.WithTTL(10*time.Second))
			require.NoError(t, err)
			waitAllHold(t, addrs, "xd1", l)
			before := l.Until()
			if tc.want != nil {
				// Two nodes answer at once; three apply and answer after
				// 200ms, long after ctx ended.
				for i := 2; i < 5; i++ {
					cl.Nodes[i].SetLatency(200*time.Millisecond, 0)
				}
			}
			ctx, cancel := tc.ctx()
			defer cancel()
			err = l.Extend(ctx, 300*time.Millisecond)
			if tc.want == nil {
				require.NoError(t, err)
				require.LessOrEqual(t, l.Validity(), 300*time.Millisecond, "a successful shorter Extend gives the shorter validity")
			} else {
				require.ErrorIs(t, err, tc.want)
				require.ErrorIs(t, err, redlock.ErrExtendUnknown)
				require.Equal(t, before, l.Until(), "a failed Extend keeps the validity it had")
				var ee *redlock.ExtendError
				require.ErrorAs(t, err, &ee)
				require.Equal(t, 2, ee.Extended, "the two fast nodes answered: %v", err)
				require.Equal(t, 3, ee.Pending, "%v", err)
				require.Zero(t, ee.Failed, "%v", err)
			}
			for i := 2; i < 5; i++ {
				cl.Nodes[i].SetLatency(0, 0)
			}
			time.Sleep(250 * time.Millisecond) // every PEXPIRE has run
			for i, n := range cl.Nodes {
				require.Greater(t, n.PTTL("xd1"), 5*time.Second, "node %d shortened the key", i)
			}
		})
	}
}

// D2: with more callers than connections, the release after a failed
// acquire (and Lock.Release) travels behind its own SETs on each node, so
// a slow node never runs a release before the SET it was meant to undo,
// and no orphan key outlives the attempt. Routed by resource over 4
// connections per node; 2 of 5 nodes hold every request (a partition)
// until healed, then run them all at once, connections in any order.
func TestReleaseNeverOvertakesItsSet(t *testing.T) {
	cl := startCluster(t, 5)
	addrs := cl.Addrs()
	// HardTimeout is long so that no connection is replaced while its node
	// holds requests (on a loaded machine the attempts can take longer than
	// the 1s default): a command on a new connection may overtake one held
	// on the old; that is not the ordering under test.
	c := newClient(t, addrs, redlock.WithNodeTimeout(20*time.Millisecond),
		redlock.WithMuxConfig(mux.Config{Conns: 4, HardTimeout: time.Minute}))
	warm(t, c)
	for i := 0; i < 2; i++ {
		cl.Nodes[i].Blackhole()
	}
	var wg sync.WaitGroup
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for k := 0; k < 5; k++ {
				res := "d2-" + strconv.Itoa(g%8)
				if l, err := c.TryAcquire(context.Background(), res, redlock.WithTTL(30*time.Second)); err == nil {
					_ = l.Release(context.Background())
				}
			}
		}(g)
	}
	wg.Wait()
	for i := 0; i < 2; i++ {
		cl.Nodes[i].Heal()
	}
	// Every command has run once the healed nodes answer a fresh PING.
	for _, a := range addrs[:2] {
		rawDo(t, a, "PING")
	}
	eventually(t, 2*time.Second, func() bool {
		for _, a := range addrs {
			if len(lockKeys(t, a)) != 0 {
				return false
			}
		}
		return true
	}, "orphan lock keys left on a node (a release overtook its SET)")
}
