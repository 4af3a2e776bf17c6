package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redmux/redmux/fakeserver"
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

	c, err := redlock.New(cl.Addrs(), redlock.WithTTL(2*time.Second))
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
	c, _ := redlock.New(cl.Addrs())
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
	c, _ := redlock.New(cl.Addrs())
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
	c, _ := redlock.New(cl.Addrs())
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
	c, _ := redlock.New(cl.Addrs())
	defer c.Close()
	ctx := context.Background()

	l, _ := c.Acquire(ctx, "once")
	fmt.Println(l.Release(ctx))
	fmt.Println(l.Release(ctx))
	// Output:
	// <nil>
	// redlock: lock not held
}
