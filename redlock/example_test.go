package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redmux/redmux/fakeserver"
	"github.com/redmux/redmux/mux"
	"github.com/redmux/redmux/redlock"
)

// Acquire a lock, extend it while the work goes on, release it.
func Example() {
	cl, err := fakeserver.StartCluster(5, fakeserver.Config{}) // stands in for 5 Redis masters
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cl.Close()

	// The example's nodes were started just now and hold no lock, so the
	// client trusts them as it finds them. Nodes already in service need
	// no option; without it, the very first use of a set of nodes waits
	// one quarantine while their data-set markers are made
	// (docs/OPERATIONS.md, rule 4).
	c, err := redlock.New(cl.Addrs(), redlock.WithTrustNodesAtStart(), redlock.WithTTL(2*time.Second))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	ctx := context.Background()

	l, err := c.Acquire(ctx, "payments:batch-42")
	if err != nil {
		fmt.Println("not acquired:", err)
		return
	}
	for step := 0; step < 3; step++ {
		// ... one bounded piece of work, well within l.Validity() ...
		if err := l.Extend(ctx, 2*time.Second); err != nil {
			fmt.Println("stop working, the lock is gone:", err)
			return
		}
	}
	fmt.Println("extensions:", l.Extensions())
	fmt.Println("valid for more than 1s:", l.Validity() > time.Second)
	fmt.Println("release:", l.Release(ctx))
	// Output:
	// extensions: 3
	// valid for more than 1s: true
	// release: <nil>
}

// TryAcquire makes one attempt; a held lock gives ErrNotAcquired with the
// node counts.
func ExampleClient_TryAcquire() {
	cl, _ := fakeserver.StartCluster(5, fakeserver.Config{})
	defer cl.Close()
	c, _ := redlock.New(cl.Addrs(), redlock.WithTrustNodesAtStart(), redlock.WithTrustNodesAtStart())
	defer c.Close()
	ctx := context.Background()

	first, _ := c.TryAcquire(ctx, "report")
	_, err := c.TryAcquire(ctx, "report")
	var na *redlock.NotAcquiredError
	fmt.Println(errors.Is(err, redlock.ErrNotAcquired), errors.As(err, &na) && na.Refused >= 3)
	_ = first.Release(ctx)
	// Output: true true
}

// Acquire retries with a random delay until tries or ctx run out.
func ExampleClient_Acquire() {
	cl, _ := fakeserver.StartCluster(5, fakeserver.Config{})
	defer cl.Close()
	c, _ := redlock.New(cl.Addrs(), redlock.WithTrustNodesAtStart(), redlock.WithTrustNodesAtStart())
	defer c.Close()
	ctx := context.Background()

	held, _ := c.Acquire(ctx, "job")
	go func() {
		time.Sleep(50 * time.Millisecond)
		_ = held.Release(ctx)
	}()
	l, err := c.Acquire(ctx, "job", redlock.WithTries(100), redlock.WithRetryDelay(5*time.Millisecond, 20*time.Millisecond))
	fmt.Println(err, l.Resource())
	_ = l.Release(ctx)
	// Output: <nil> job
}

// Extend fails with ErrLockExpired once the validity is over: the holder
// must stop.
func ExampleLock_Extend() {
	cl, _ := fakeserver.StartCluster(5, fakeserver.Config{})
	defer cl.Close()
	c, _ := redlock.New(cl.Addrs(), redlock.WithTrustNodesAtStart(), redlock.WithTrustNodesAtStart())
	defer c.Close()
	ctx := context.Background()

	l, _ := c.Acquire(ctx, "short", redlock.WithTTL(50*time.Millisecond))
	time.Sleep(60 * time.Millisecond)
	err := l.Extend(ctx, time.Second)
	fmt.Println(errors.Is(err, redlock.ErrLockExpired), l.Validity())
	// Output: true 0s
}

// Release on all nodes; a second Release reports ErrNotHeld.
func ExampleLock_Release() {
	cl, _ := fakeserver.StartCluster(5, fakeserver.Config{})
	defer cl.Close()
	c, _ := redlock.New(cl.Addrs(), redlock.WithTrustNodesAtStart(), redlock.WithTrustNodesAtStart())
	defer c.Close()
	ctx := context.Background()

	l, _ := c.Acquire(ctx, "once")
	fmt.Println(l.Release(ctx))
	fmt.Println(l.Release(ctx))
	// Output:
	// <nil>
	// redlock: lock not held
}

// KeepAlive holds the lock while the work runs: it extends it in the
// background and cancels the returned context, with the cause, the moment
// the lock cannot be counted on. Work runs under that context.
func ExampleLock_KeepAlive() {
	cl, _ := fakeserver.StartCluster(5, fakeserver.Config{})
	defer cl.Close()
	c, _ := redlock.New(cl.Addrs(), redlock.WithTrustNodesAtStart(), redlock.WithTrustNodesAtStart())
	defer c.Close()
	ctx := context.Background()

	l, err := c.Acquire(ctx, "nightly-report", redlock.WithTTL(100*time.Millisecond))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Release(context.WithoutCancel(ctx))
	work, err := l.KeepAlive(ctx, redlock.KeepAliveMaxHold(10*time.Minute))
	if err != nil {
		fmt.Println(err)
		return
	}
	select { // the "work": five TTLs long
	case <-time.After(500 * time.Millisecond):
		fmt.Println("done, lock still valid:", l.Validity() > 0, "extended:", l.Extensions() > 1)
	case <-work.Done():
		fmt.Println("stop, the lock is gone:", context.Cause(work))
	}
	// Output: done, lock still valid: true extended: true
}

// The keep-alive context says why it ended: here every node lost the key.
func ExampleLock_KeepAlive_lost() {
	cl, _ := fakeserver.StartCluster(3, fakeserver.Config{})
	defer cl.Close()
	c, _ := redlock.New(cl.Addrs(), redlock.WithTrustNodesAtStart(), redlock.WithTrustNodesAtStart())
	defer c.Close()
	ctx := context.Background()

	l, _ := c.Acquire(ctx, "job", redlock.WithTTL(100*time.Millisecond))
	work, _ := l.KeepAlive(ctx)
	for _, n := range cl.Nodes {
		n.Del("job") // say, an operator's FLUSHALL
	}
	<-work.Done()
	fmt.Println(errors.Is(context.Cause(work), redlock.ErrLockLost), l.Validity())
	// Output: true 0s
}

// AcquireMulti takes several resources all or nothing.
func ExampleClient_AcquireMulti() {
	cl, _ := fakeserver.StartCluster(5, fakeserver.Config{})
	defer cl.Close()
	c, _ := redlock.New(cl.Addrs(), redlock.WithTrustNodesAtStart(), redlock.WithTrustNodesAtStart())
	defer c.Close()
	ctx := context.Background()

	other, _ := c.Acquire(ctx, "account:2")
	_, err := c.TryAcquireMulti(ctx, []string{"account:1", "account:2"})
	fmt.Println("while account:2 is held:", errors.Is(err, redlock.ErrNotAcquired))
	_ = other.Release(ctx)

	l, err := c.AcquireMulti(ctx, []string{"account:1", "account:2"})
	fmt.Println(err, l.Resources())
	fmt.Println(l.Release(ctx))
	// Output:
	// while account:2 is held: true
	// <nil> [account:1 account:2]
	// <nil>
}

// Inspect asks the nodes who holds a resource and for how long.
func ExampleClient_Inspect() {
	cl, _ := fakeserver.StartCluster(5, fakeserver.Config{})
	defer cl.Close()
	c, _ := redlock.New(cl.Addrs(), redlock.WithTrustNodesAtStart(), redlock.WithTrustNodesAtStart())
	defer c.Close()
	ctx := context.Background()

	l, _ := c.Acquire(ctx, "inventory", redlock.WithTTL(time.Minute))
	time.Sleep(20 * time.Millisecond) // let the SETs a quorum did not need land too
	in, _ := c.Inspect(ctx, "inventory")
	fmt.Println(in.HeldBy(l), in.Agree, in.TTL > 50*time.Second)
	_ = l.Release(ctx)
	in, _ = c.Inspect(ctx, "inventory")
	fmt.Println(in.Held(), in.Agree)
	// Output:
	// true 5 true
	// false 0
}

// WithBackoff: waits that double from base up to max, with jitter.
func ExampleWithBackoff() {
	cl, _ := fakeserver.StartCluster(5, fakeserver.Config{})
	defer cl.Close()
	c, _ := redlock.New(cl.Addrs(), redlock.WithTrustNodesAtStart(), redlock.WithBackoff(5*time.Millisecond, 200*time.Millisecond))
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	l, err := c.Acquire(ctx, "queue")
	fmt.Println(err)
	_ = l.Release(ctx)
	// Output: <nil>
}

// WithRetryFunc: the caller decides after each failed attempt.
func ExampleWithRetryFunc() {
	cl, _ := fakeserver.StartCluster(5, fakeserver.Config{})
	defer cl.Close()
	c, _ := redlock.New(cl.Addrs(), redlock.WithTrustNodesAtStart(), redlock.WithTrustNodesAtStart())
	defer c.Close()
	ctx := context.Background()

	held, _ := c.Acquire(ctx, "leader")
	defer held.Release(ctx)
	threeQuickTries := redlock.WithRetryFunc(func(attempt int) (time.Duration, bool) {
		return time.Millisecond, attempt < 3
	})
	_, err := c.Acquire(ctx, "leader", threeQuickTries)
	var na *redlock.NotAcquiredError
	fmt.Println(errors.As(err, &na), na.Tries)
	// Output: true 3
}

// A majority that cannot be reached is not retried: the error says why,
// node by node.
func ExampleNotAcquiredError() {
	cl, _ := fakeserver.StartCluster(3, fakeserver.Config{Password: "right"})
	defer cl.Close()
	c, _ := redlock.New(cl.Addrs(), redlock.WithTrustNodesAtStart(), redlock.WithMuxConfig(mux.Config{Password: "wrong"}))
	defer c.Close()

	_, err := c.Acquire(context.Background(), "k")
	var na *redlock.NotAcquiredError
	errors.As(err, &na)
	fmt.Println(errors.Is(err, redlock.ErrUnreachable), errors.Is(err, mux.ErrAuth), na.Tries)
	for _, n := range na.Nodes[:1] {
		fmt.Println(n.Status, strings.Contains(n.Err.Error(), "WRONGPASS"))
	}
	// Output:
	// true true 1
	// failed true
}

// WithFencing: each grant of a resource gets a higher token; the protected
// resource keeps the highest it has seen and refuses a lower one, so a
// holder that was paused past its validity cannot write after a newer one.
func ExampleWithFencing() {
	cl, _ := fakeserver.StartCluster(5, fakeserver.Config{})
	defer cl.Close()
	c, _ := redlock.New(cl.Addrs(), redlock.WithTrustNodesAtStart(), redlock.WithFencing())
	defer c.Close()
	ctx := context.Background()

	var highest uint64 // the resource's side: the highest token it accepted
	write := func(token uint64) bool {
		if token < highest {
			return false
		}
		highest = token
		return true
	}
	a, _ := c.Acquire(ctx, "ledger")
	_ = a.Release(ctx) // say a's holder was paused here, past its validity
	b, _ := c.Acquire(ctx, "ledger")
	fmt.Println("b's token is higher:", b.Token() > a.Token())
	fmt.Println("b's write accepted:", write(b.Token()))
	fmt.Println("a's late write accepted:", write(a.Token()))
	_ = b.Release(ctx)
	// Output:
	// b's token is higher: true
	// b's write accepted: true
	// a's late write accepted: false
}

// lockMetrics is an Observer as a service would write one: counters and a
// latency sum, updated without locks (a Prometheus or OpenTelemetry
// adapter records the same Event fields into its instruments).
type lockMetrics struct {
	acquired, notAcquired, contended, lost, nodeErrors atomic.Int64
	acquireNanos                                       atomic.Int64
}

func (m *lockMetrics) Observe(e redlock.Event) {
	switch e.Op {
	case redlock.OpAcquire:
		if e.Err == nil {
			m.acquired.Add(1)
		} else {
			m.notAcquired.Add(1)
		}
		if e.Contended {
			m.contended.Add(1)
		}
		m.acquireNanos.Add(int64(e.Duration))
	case redlock.OpNodeError:
		m.nodeErrors.Add(1)
	}
	if e.Lost() {
		m.lost.Add(1)
	}
}

// WithObserver reports every operation's outcome and every node error to a
// metrics sink.
func ExampleWithObserver() {
	cl, _ := fakeserver.StartCluster(5, fakeserver.Config{})
	defer cl.Close()
	m := &lockMetrics{}
	c, _ := redlock.New(cl.Addrs(), redlock.WithTrustNodesAtStart(), redlock.WithObserver(m))
	defer c.Close()
	ctx := context.Background()

	l, _ := c.Acquire(ctx, "report")
	_, err := c.TryAcquire(ctx, "report") // held: contended
	fmt.Println("second acquire:", errors.Is(err, redlock.ErrNotAcquired))
	_ = l.Release(ctx)
	fmt.Println("acquired", m.acquired.Load(), "not acquired", m.notAcquired.Load(), "contended", m.contended.Load(), "lost", m.lost.Load())
	// Output:
	// second acquire: true
	// acquired 1 not acquired 1 contended 1 lost 0
}

// A node that restarts without its data and comes back at once is
// quarantined (its grants do not count) for the largest TTL in use, so a
// lock it had granted cannot be handed out again through it
// (docs/OPERATIONS.md). The clients share the largest TTL through the
// nodes (rule 5); WithQuarantine sets a longer period. The quarantine
// counts from the latest instant the new process can have started: its
// uptime is rounded to the second, so up to 1 s more than the period.
func ExampleWithQuarantine() {
	cl, _ := fakeserver.StartCluster(5, fakeserver.Config{})
	defer cl.Close()
	c, _ := redlock.New(cl.Addrs(), redlock.WithTrustNodesAtStart(), redlock.WithTTL(2*time.Second), redlock.WithQuarantine(5*time.Second),
		redlock.WithNodeTimeout(time.Second)) // generous: a busy machine runs the examples too
	defer c.Close()
	ctx := context.Background()
	l, _ := c.Acquire(ctx, "report")

	_ = cl.Nodes[0].Restart(true, 0) // lost its keys, back at once
	for len(c.Quarantined()) == 0 {  // the client redials and learns the new run_id
		time.Sleep(10 * time.Millisecond)
	}
	left := c.Quarantined()[0]
	fmt.Println("node 0 quarantined for 5s to 6s:", left > 4*time.Second && left <= 6100*time.Millisecond)
	// the lock still holds on the 4 others, and the extension puts the
	// key back on node 0, where it counts once the quarantine is over
	fmt.Println("extend:", l.Extend(ctx, 2*time.Second))
	fmt.Println("keys put back:", c.Restored())
	fmt.Println("release:", l.Release(ctx))
	// Output:
	// node 0 quarantined for 5s to 6s: true
	// extend: <nil>
	// keys put back: 1
	// release: <nil>
}

// A program that shares one mux client between the lock and its own
// commands builds it from a Config passed through MuxConfig, which adds
// what the lock needs (its scripts, the restart and flush watches).
func ExampleNewWithMux() {
	cl, err := fakeserver.StartCluster(3, fakeserver.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cl.Close()
	m, err := mux.New(redlock.MuxConfig(mux.Config{Addrs: cl.Addrs(), ClientName: "orders"}))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close() // the Client's Close leaves m open
	c, err := redlock.NewWithMux(m, redlock.WithTrustNodesAtStart())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	l, err := c.Acquire(context.Background(), "orders:compaction")
	if err != nil {
		fmt.Println("not acquired:", err)
		return
	}
	fmt.Println("tracks restarts:", m.TracksIncarnations())
	fmt.Println("release:", l.Release(context.Background()))
	// Output:
	// tracks restarts: true
	// release: <nil>
}
