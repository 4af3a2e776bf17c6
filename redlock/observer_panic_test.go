package redlock_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redmux/redmux/fakeserver"
	"github.com/redmux/redmux/redlock"
)

// panicker is an Observer that panics on the events of the ops in on (a
// bit per Op), counting what it saw.
type panicker struct {
	on   uint32
	in   redlock.Op // with OpNodeError in on: only the node errors of this op (0: all)
	seen atomic.Int64
}

func (p *panicker) Observe(e redlock.Event) {
	p.seen.Add(1)
	if p.on&(1<<e.Op) != 0 && (e.Op != redlock.OpNodeError || p.in == 0 || e.In == p.in) {
		panic(fmt.Sprintf("observer bug on %v", e.Op))
	}
}

func panicOn(ops ...redlock.Op) *panicker {
	p := &panicker{}
	for _, o := range ops {
		p.on |= 1 << o
	}
	return p
}

// within runs f on another goroutine and marks the test failed, going on,
// if it panics or does not return within d (a generous bound: it returns
// in milliseconds when nothing is wrong), so that a panic's aftermath (a
// mutex left held) shows in the calls after it.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan any, 1)
	go func() {
		defer func() { done <- recover() }()
		f()
	}()
	select {
	case p := <-done:
		if p != nil {
			t.Errorf("%s panicked: %v", what, p)
		}
	case <-time.After(d):
		t.Errorf("%s did not return within %v", what, d)
	}
}

// keysLeft counts the nodes that still hold key (read in the fake's
// keyspace: a partitioned node answers nothing).
func keysLeft(cl *fakeserver.Cluster, key string) int {
	n := 0
	for _, nd := range cl.Nodes {
		if _, ok := nd.Get(key); ok {
			n++
		}
	}
	return n
}

// TestObserverPanics (issue 34, R1): an observer that panics loses its
// events and nothing else. A panic in the OpAcquire event still returns
// the lock; one in the OpNodeError events of an Acquire, an Extend or a
// Release (node 4 is down throughout: every operation meets it) leaves
// no mutex held, so Release, Extend and Close return; one on a keep-alive
// worker leaves the process alive and the lock kept alive. Every lock is
// released in the end: 0 keys left on any node. Each panic is counted.
func TestObserverPanics(t *testing.T) {
	ctx := context.Background()
	const sec = time.Second
	t.Run("acquire", func(t *testing.T) {
		cl := startCluster(t, 5)
		obs := panicOn(redlock.OpAcquire)
		c := newClient(t, cl.Addrs(), redlock.WithObserver(obs), redlock.WithTTL(10*sec))
		var l redlock.Lock
		within(t, sec, "TryAcquire", func() {
			var err error
			l, err = c.TryAcquire(ctx, "obs:acquire")
			require.NoError(t, err)
		})
		require.True(t, l.Held(), "the granted lock is returned")
		waitAllHold(t, cl.Addrs(), "obs:acquire", l)
		within(t, sec, "Release", func() { require.NoError(t, l.Release(ctx)) })
		require.Zero(t, keysLeft(cl, "obs:acquire"), "keys orphaned")
		require.Equal(t, uint64(1), c.ObserverPanics())
		within(t, sec, "Close", func() { require.NoError(t, c.Close()) })
	})
	t.Run("node-error", func(t *testing.T) {
		cl := startCluster(t, 5)
		cl.Nodes[4].Down() // every operation's node error
		obs := panicOn(redlock.OpNodeError)
		c := newClient(t, cl.Addrs(), redlock.WithObserver(obs), redlock.WithTTL(10*sec), redlock.WithNodeTimeout(100*time.Millisecond))
		var l redlock.Lock
		within(t, sec, "TryAcquire", func() {
			var err error
			l, err = c.TryAcquire(ctx, "obs:node")
			require.NoError(t, err)
		})
		require.True(t, l.Held())
		within(t, sec, "Extend", func() { require.NoError(t, l.Extend(ctx, 10*sec)) })
		within(t, sec, "Release", func() { require.NoError(t, l.Release(ctx)) })
		within(t, sec, "Extend after Release", func() { require.ErrorIs(t, l.Extend(ctx, 10*sec), redlock.ErrNotHeld) })
		within(t, sec, "Release again", func() { require.ErrorIs(t, l.Release(ctx), redlock.ErrNotHeld) })
		require.Zero(t, keysLeft(cl, "obs:node"), "keys orphaned")
		require.GreaterOrEqual(t, c.ObserverPanics(), uint64(3), "a node error in each of acquire, extend and release")
		within(t, sec, "Close", func() { require.NoError(t, c.Close()) })
	})
	t.Run("release-node-error", func(t *testing.T) {
		// the review's case: the panic inside Release, which held the
		// lock's op mutex across the observer
		cl := startCluster(t, 5)
		cl.Nodes[4].Down()
		obs := panicOn(redlock.OpNodeError)
		obs.in = redlock.OpRelease
		c := newClient(t, cl.Addrs(), redlock.WithObserver(obs), redlock.WithTTL(10*sec), redlock.WithNodeTimeout(100*time.Millisecond))
		l, err := c.TryAcquire(ctx, "obs:rel")
		require.NoError(t, err)
		within(t, sec, "Release", func() { require.NoError(t, l.Release(ctx)) })
		within(t, sec, "Extend after Release", func() { require.ErrorIs(t, l.Extend(ctx, 10*sec), redlock.ErrNotHeld) })
		within(t, sec, "Close", func() { require.NoError(t, c.Close()) })
		require.Zero(t, keysLeft(cl, "obs:rel"), "keys orphaned")
		require.Equal(t, uint64(1), c.ObserverPanics())
	})
	t.Run("keepalive-worker", func(t *testing.T) {
		cl := startCluster(t, 5)
		obs := panicOn(redlock.OpKeepAlive, redlock.OpKeepAliveEnd)
		c := newClient(t, cl.Addrs(), redlock.WithObserver(obs), redlock.WithTTL(60*time.Millisecond))
		l, err := c.TryAcquire(ctx, "obs:ka")
		require.NoError(t, err)
		kctx, err := l.KeepAlive(ctx)
		require.NoError(t, err)
		// 5 TTLs: several extensions, each event panicking on a worker
		eventually(t, 10*sec, func() bool { return c.ObserverPanics() >= 3 }, "no keep-alive event came")
		require.NoError(t, kctx.Err(), "kept alive through the panics: %v", context.Cause(kctx))
		require.True(t, l.Held())
		require.Positive(t, l.Validity())
		within(t, sec, "Release", func() { require.NoError(t, l.Release(ctx)) })
		require.Zero(t, keysLeft(cl, "obs:ka"), "keys orphaned")
		require.ErrorIs(t, context.Cause(kctx), redlock.ErrNotHeld)
		// a keep-alive that Close ends: its OpKeepAliveEnd panics on
		// Close's caller
		l2, err := c.TryAcquire(ctx, "obs:ka2")
		require.NoError(t, err)
		_, err = l2.KeepAlive(ctx)
		require.NoError(t, err)
		before := c.ObserverPanics()
		within(t, sec, "Close", func() { require.NoError(t, c.Close()) })
		require.Greater(t, c.ObserverPanics(), before, "Close's OpKeepAliveEnd panicked and was recovered")
		require.ErrorIs(t, l2.Release(ctx), redlock.ErrClosed)
	})
}

// TestReleaseUnconfirmedRetained (issue 34, R2): under a one-way partition
// of 3 of 5 nodes that drops the requests, a Release is sent to every
// node but confirmed by 2: the lock is retained (Held, no validity,
// ReleaseError.Retained) while the key sits on the 3, and a Release once
// the partition heals frees it.
func TestReleaseUnconfirmedRetained(t *testing.T) {
	ctx := context.Background()
	cl := startCluster(t, 5)
	c := newClient(t, cl.Addrs(), redlock.WithTTL(20*time.Second), redlock.WithNodeTimeout(100*time.Millisecond))
	warm(t, c)
	l, err := c.TryAcquire(ctx, "part:rel")
	require.NoError(t, err)
	waitAllHold(t, cl.Addrs(), "part:rel", l)
	for i := 0; i < 3; i++ {
		cl.Nodes[i].Partition(fakeserver.Requests)
	}
	err = l.Release(ctx)
	var re *redlock.ReleaseError
	require.ErrorAs(t, err, &re)
	require.ErrorIs(t, err, redlock.ErrReleasePartial)
	require.True(t, re.Retained, "confirmed by 2 of 5: retained (%v)", err)
	require.Equal(t, 2, re.Released)
	require.True(t, l.Held(), "releasable again")
	require.Zero(t, l.Validity(), "no validity after the holder let go")
	require.Equal(t, 3, keysLeft(cl, "part:rel"), "the 3 partitioned nodes never ran the release")
	// a retry during the partition: still retained, not ErrNotHeld
	err = l.Release(ctx)
	require.ErrorAs(t, err, &re)
	require.True(t, re.Retained, "%v", err)
	for i := 0; i < 3; i++ {
		cl.Nodes[i].Partition(fakeserver.NoPartition)
	}
	// the healed nodes' connections that lost requests were closed and are
	// redialled: once every node takes a probe lock, Release again
	eventually(t, 10*time.Second, func() bool {
		p, err := c.TryAcquire(ctx, "part:probe")
		if err != nil {
			return false
		}
		time.Sleep(20 * time.Millisecond)
		all := keysLeft(cl, "part:probe") == 5
		_ = p.Release(ctx)
		return all
	}, "the healed nodes did not come back")
	require.NoError(t, l.Release(ctx))
	require.False(t, l.Held())
	require.Zero(t, keysLeft(cl, "part:rel"), "keys left after the release")
	require.ErrorIs(t, l.Release(ctx), redlock.ErrNotHeld)
}

// TestObserverLockID: the events about one lock carry its ID (Lock.ID),
// and two acquisitions of one resource have different IDs.
func TestObserverLockID(t *testing.T) {
	ctx := context.Background()
	_, rec, c := observed(t, 50*time.Millisecond)
	rec.take()
	a, err := c.TryAcquire(ctx, "id")
	require.NoError(t, err)
	require.NotZero(t, a.ID())
	require.NoError(t, a.Extend(ctx, time.Second))
	kctx, err := a.KeepAlive(ctx, redlock.KeepAliveMaxHold(time.Millisecond*300))
	require.NoError(t, err)
	<-kctx.Done()
	require.ErrorIs(t, a.Release(ctx), redlock.ErrLockExpired) // the cap's last validity ended
	b, err := c.TryAcquire(ctx, "id")
	require.NoError(t, err)
	require.NotEqual(t, a.ID(), b.ID())
	require.NoError(t, b.Release(ctx))
	byID := map[uint64][]redlock.Op{}
	for _, e := range rec.take() {
		byID[e.LockID] = append(byID[e.LockID], e.Op)
	}
	require.Subset(t, byID[a.ID()], []redlock.Op{redlock.OpAcquire, redlock.OpExtend, redlock.OpKeepAliveEnd, redlock.OpRelease})
	require.Equal(t, []redlock.Op{redlock.OpAcquire, redlock.OpRelease}, byID[b.ID()])
}
