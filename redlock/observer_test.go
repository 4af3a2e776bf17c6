package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redmux/redmux/fakeserver"
	"github.com/redmux/redmux/mux"
	"github.com/redmux/redmux/redlock"
)

// recorder is an Observer that keeps every event.
type recorder struct {
	mu     sync.Mutex
	events []redlock.Event
}

func (r *recorder) Observe(e redlock.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

// take returns the events so far and forgets them.
func (r *recorder) take() []redlock.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.events
	r.events = nil
	return out
}

func ops(es []redlock.Event, op redlock.Op) []redlock.Event {
	var out []redlock.Event
	for _, e := range es {
		if e.Op == op {
			out = append(out, e)
		}
	}
	return out
}

// observed starts a 5-node fake cluster and a warmed-up client on it that
// reports to a recorder, with the node timeout given.
func observed(t *testing.T, nodeTimeout time.Duration) (*fakeserver.Cluster, *recorder, *redlock.Client) {
	t.Helper()
	cl := startCluster(t, 5)
	rec := &recorder{}
	c := newClient(t, cl.Addrs(), redlock.WithObserver(rec), redlock.WithNodeTimeout(nodeTimeout))
	warm(t, c)
	return cl, rec, c
}

// TestObserver: every operation reports its outcome once, with its
// duration, attempts, contention and error; node errors come with the
// node, its address and the operation; a lost lock is Lost.
func TestObserver(t *testing.T) {
	cl := startCluster(t, 5)
	addrs := cl.Addrs()
	rec := &recorder{}
	c := newClient(t, addrs, redlock.WithObserver(rec), redlock.WithNodeTimeout(50*time.Millisecond))
	warm(t, c)
	rec.take()
	ctx := context.Background()

	l, err := c.Acquire(ctx, "obs")
	require.NoError(t, err)
	es := rec.take()
	require.Len(t, es, 1)
	e := es[0]
	require.Equal(t, redlock.OpAcquire, e.Op)
	require.Equal(t, "obs", e.Resource)
	require.NoError(t, e.Err)
	require.Equal(t, 1, e.Attempts)
	require.False(t, e.Contended)
	require.Positive(t, e.Duration)
	require.Equal(t, -1, e.Node)

	// contended: another holder on 3 of 5, two tries
	setForeign(t, addrs, "busy", 0, 1, 2)
	_, err = c.Acquire(ctx, "busy", redlock.WithTries(2), redlock.WithRetryDelay(time.Millisecond, 2*time.Millisecond))
	require.ErrorIs(t, err, redlock.ErrNotAcquired)
	es = ops(rec.take(), redlock.OpAcquire)
	require.Len(t, es, 1)
	require.ErrorIs(t, es[0].Err, redlock.ErrNotAcquired)
	require.Equal(t, 2, es[0].Attempts)
	require.True(t, es[0].Contended)

	require.NoError(t, l.Extend(ctx, 10*time.Second))
	es = rec.take()
	require.Len(t, es, 1)
	require.Equal(t, redlock.OpExtend, es[0].Op)
	require.NoError(t, es[0].Err)

	// a node down: its errors are node errors of the operation they hit
	cl.Nodes[3].Down()
	require.NoError(t, l.Release(ctx), "4 of 5 released")
	es = rec.take()
	rel := ops(es, redlock.OpRelease)
	require.Len(t, rel, 1)
	require.NoError(t, rel[0].Err)
	ne := ops(es, redlock.OpNodeError)
	require.Len(t, ne, 1, "%v", es)
	require.Equal(t, 3, ne[0].Node)
	require.Equal(t, addrs[3], ne[0].Addr)
	require.Equal(t, redlock.OpRelease, ne[0].In)
	require.Error(t, ne[0].Err)
	cl.Nodes[3].Up()
	eventually(t, 5*time.Second, func() bool { // the client reconnects
		in, err := c.Inspect(ctx, "x")
		if err != nil {
			return false
		}
		for _, n := range in.Nodes {
			if n.Err != nil {
				return false
			}
		}
		return true
	}, "the client did not reconnect")

	// a lost lock: Extend finds its value on 2 of 5
	l, err = c.Acquire(ctx, "lost")
	require.NoError(t, err)
	waitAllHold(t, addrs, "lost", l)
	for i := 0; i < 3; i++ {
		rawDo(t, addrs[i], "DEL", "lost")
	}
	rec.take()
	require.ErrorIs(t, l.Extend(ctx, time.Second), redlock.ErrLockLost)
	es = ops(rec.take(), redlock.OpExtend)
	require.Len(t, es, 1)
	require.True(t, es[0].Lost())

	// keep-alive extensions report as OpKeepAlive, until the lock is released
	l, err = c.Acquire(ctx, "ka", redlock.WithTTL(100*time.Millisecond))
	require.NoError(t, err)
	_, err = l.KeepAlive(ctx)
	require.NoError(t, err)
	eventually(t, 2*time.Second, func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return len(ops(rec.events, redlock.OpKeepAlive)) >= 2
	}, "no keep-alive events")
	require.NoError(t, l.Release(ctx))
	time.Sleep(20 * time.Millisecond) // an end would be reported by now
	es = rec.take()
	for _, e := range ops(es, redlock.OpKeepAlive) {
		require.Equal(t, "ka", e.Resource)
		require.NoError(t, e.Err)
	}
	require.Empty(t, ops(es, redlock.OpKeepAliveEnd), "a keep-alive ended by Release is reported by the Release")
	require.Equal(t, "keepalive", redlock.OpKeepAlive.String())
	require.Equal(t, "node_error", redlock.OpNodeError.String())
	require.Equal(t, "unknown", redlock.Op(0).String())
}

// TestObserverKeepAliveEnd: a keep-alive that ends by itself reports one
// OpKeepAliveEnd with the cause. A kept-alive lock whose every node stopped
// answering: its extensions end unknown while validity remains (retried),
// and the end says it expired (Lost), once. The holder's ctx ended: its
// cause, not Lost.
func TestObserverKeepAliveEnd(t *testing.T) {
	cl, rec, c := observed(t, 30*time.Millisecond)
	ctx := context.Background()
	ends := func() []redlock.Event {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return ops(rec.events, redlock.OpKeepAliveEnd)
	}

	l, err := c.Acquire(ctx, "silent", redlock.WithTTL(300*time.Millisecond))
	require.NoError(t, err)
	kctx, err := l.KeepAlive(ctx)
	require.NoError(t, err)
	rec.take()
	for _, n := range cl.Nodes {
		n.Blackhole()
	}
	<-kctx.Done()
	eventually(t, 2*time.Second, func() bool { return len(ends()) > 0 }, "no OpKeepAliveEnd after the lock expired")
	time.Sleep(50 * time.Millisecond) // a second report would come by now
	es := rec.take()
	end := ops(es, redlock.OpKeepAliveEnd)
	require.Len(t, end, 1)
	require.Equal(t, "silent", end[0].Resource)
	require.True(t, end[0].Lost(), "%v", end[0].Err)
	require.ErrorIs(t, end[0].Err, redlock.ErrLockExpired)
	require.ErrorIs(t, context.Cause(kctx), redlock.ErrLockExpired)
	require.GreaterOrEqual(t, end[0].Duration, 300*time.Millisecond/2, "held since the acquisition")
	require.NotEmpty(t, ops(es, redlock.OpKeepAlive), "the extensions tried meanwhile are reported too")
	for _, n := range cl.Nodes {
		n.Heal()
	}

	warm(t, c)
	l, err = c.Acquire(ctx, "ctx", redlock.WithTTL(time.Second))
	require.NoError(t, err)
	hctx, cancel := context.WithCancel(ctx)
	_, err = l.KeepAlive(hctx)
	require.NoError(t, err)
	rec.take()
	cancel()
	eventually(t, 2*time.Second, func() bool { return len(ends()) > 0 }, "no OpKeepAliveEnd after the holder's ctx ended")
	end = ops(rec.take(), redlock.OpKeepAliveEnd)
	require.Len(t, end, 1)
	require.ErrorIs(t, end[0].Err, context.Canceled)
	require.False(t, end[0].Lost())
	require.NoError(t, l.Release(ctx))
	require.Equal(t, "keepalive_end", redlock.OpKeepAliveEnd.String())
}

// blockOnEnd is an observer that blocks in its first OpKeepAliveEnd until
// released.
type blockOnEnd struct {
	in, release chan struct{}
	once        sync.Once
}

func (b *blockOnEnd) Observe(e redlock.Event) {
	if e.Op == redlock.OpKeepAliveEnd {
		b.once.Do(func() {
			close(b.in)
			<-b.release
		})
	}
}

// TestObserverBlockedKeepsOthersAlive: an observer blocked on one lock's
// OpKeepAliveEnd holds up the delivery of keep-alive events, not the
// scheduler: another kept-alive lock is still extended meanwhile (counted:
// 3 extensions while the observer is blocked). Reported from the
// scheduler's loop, a blocked observer stopped every extension and let the
// other lock expire with its keep-alive context still live.
func TestObserverBlockedKeepsOthersAlive(t *testing.T) {
	cl := startCluster(t, 5)
	obs := &blockOnEnd{in: make(chan struct{}), release: make(chan struct{})}
	c := newClient(t, cl.Addrs(), redlock.WithObserver(obs))
	warm(t, c)
	defer close(obs.release)
	ctx := context.Background()
	b, err := c.Acquire(ctx, "b", redlock.WithTTL(300*time.Millisecond))
	require.NoError(t, err)
	bctx, err := b.KeepAlive(ctx)
	require.NoError(t, err)
	a, err := c.Acquire(ctx, "a", redlock.WithTTL(time.Second))
	require.NoError(t, err)
	actx, cancel := context.WithCancel(ctx)
	_, err = a.KeepAlive(actx)
	require.NoError(t, err)
	cancel() // a's keep-alive ends: the observer blocks on its event
	select {
	case <-obs.in:
	case <-time.After(5 * time.Second):
		t.Fatal("no OpKeepAliveEnd for a's ended keep-alive")
	}
	e0 := b.Extensions()
	eventually(t, 10*time.Second, func() bool { return b.Extensions() >= e0+3 || bctx.Err() != nil },
		"b not extended while the observer was blocked")
	require.NoError(t, bctx.Err(), "b's keep-alive ended while the observer was blocked")
	require.Positive(t, b.Validity())
}

// blockOnLock is an observer that blocks in every event of one lock (by
// LockID) until released, and counts every other lock's OpKeepAlive.
type blockOnLock struct {
	id          atomic.Uint64
	in, release chan struct{}
	once        sync.Once
	mu          sync.Mutex
	kept        map[uint64]int // OpKeepAlive events by LockID
}

func (b *blockOnLock) Observe(e redlock.Event) {
	if id := b.id.Load(); id != 0 && e.LockID == id {
		b.once.Do(func() { close(b.in) })
		<-b.release
		return
	}
	if e.Op == redlock.OpKeepAlive {
		b.mu.Lock()
		b.kept[e.LockID]++
		b.mu.Unlock()
	}
}

// TestObserverBlockedOnOneLock (issue 46): an observer that blocks on
// every event of one kept-alive lock ends no other lock's keep-alive. With
// the events delivered on the keep-alive workers, each extension of the
// blocked lock took a worker for good, and after eight of them 20 of 20
// other locks expired with their keep-alive contexts live. The other
// locks' events are delivered, late and in full, once the observer
// returns, and none was dropped.
func TestObserverBlockedOnOneLock(t *testing.T) {
	cl := startCluster(t, 5)
	obs := &blockOnLock{in: make(chan struct{}), release: make(chan struct{}), kept: map[uint64]int{}}
	c := newClient(t, cl.Addrs(), redlock.WithObserver(obs))
	warm(t, c)
	released := false
	defer func() {
		if !released {
			close(obs.release)
		}
	}()
	ctx := context.Background()
	const others = 20
	var locks []redlock.Lock
	var kctx []context.Context
	for i := 0; i < others; i++ {
		l, err := c.Acquire(ctx, fmt.Sprintf("other-%d", i), redlock.WithTTL(300*time.Millisecond))
		require.NoError(t, err)
		k, err := l.KeepAlive(ctx)
		require.NoError(t, err)
		locks, kctx = append(locks, l), append(kctx, k)
	}
	a, err := c.Acquire(ctx, "blocked", redlock.WithTTL(100*time.Millisecond))
	require.NoError(t, err)
	obs.id.Store(a.ID())
	_, err = a.KeepAlive(ctx) // every extension of a blocks the observer
	require.NoError(t, err)
	select {
	case <-obs.in:
	case <-time.After(10 * time.Second):
		t.Fatal("the observer never saw the blocked lock's keep-alive")
	}
	// 12 of a's extensions (100 ms TTL) would have taken all 8 workers
	eventually(t, 10*time.Second, func() bool { return a.Extensions() >= 12 }, "the blocked lock was not extended 12 times")
	e0 := make([]int, others)
	for i, l := range locks {
		e0[i] = l.Extensions()
	}
	for i, l := range locks {
		eventually(t, 10*time.Second, func() bool { return l.Extensions() >= e0[i]+3 || kctx[i].Err() != nil },
			"lock %d not extended while the observer was blocked", i)
		require.NoError(t, kctx[i].Err(), "lock %d's keep-alive ended while the observer was blocked", i)
		require.Positive(t, l.Validity(), "lock %d", i)
	}
	close(obs.release)
	released = true
	for i, l := range locks {
		want := l.Extensions()
		eventually(t, 10*time.Second, func() bool {
			obs.mu.Lock()
			defer obs.mu.Unlock()
			return obs.kept[l.ID()] >= want
		}, "lock %d: fewer OpKeepAlive events than its %d extensions", i, want)
		require.NoError(t, l.Release(ctx))
	}
	require.NoError(t, a.Release(ctx))
	require.Zero(t, c.ObserverDropped())
}

// TestObserverTimeoutIsNodeError: a node that answers after the node
// timeout is a node error (mux.ErrTimeout) of the acquisition; a node
// not needed once the quorum decided is not.
func TestObserverTimeoutIsNodeError(t *testing.T) {
	cl, rec, c := observed(t, 30*time.Millisecond)
	ctx := context.Background()
	cl.Nodes[0].SetLatency(200*time.Millisecond, 0)
	cl.Nodes[1].SetLatency(200*time.Millisecond, 0)
	cl.Nodes[2].SetLatency(200*time.Millisecond, 0)
	rec.take()
	_, err := c.TryAcquire(ctx, "slow")
	require.ErrorIs(t, err, redlock.ErrNotAcquired)
	ne := ops(rec.take(), redlock.OpNodeError)
	require.Len(t, ne, 3)
	for _, e := range ne {
		require.True(t, errors.Is(e.Err, mux.ErrTimeout), "%v", e.Err)
		require.Equal(t, redlock.OpAcquire, e.In)
	}
	for _, n := range cl.Nodes {
		n.SetLatency(0, 0)
	}
}

// counter is the cheapest useful observer: counts by operation.
type counter struct{ n [8]atomic.Int64 }

func (c *counter) Observe(e redlock.Event) { c.n[e.Op].Add(1) }
