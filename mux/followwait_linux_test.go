//go:build linux && !redmux_portable

package mux

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"time"

	"github.com/redmux/redmux/fakeserver"
	"github.com/redmux/redmux/resp"
)

// The followers' timer-free wait (driver_token_wait_linux.go). Each test
// cuts a node's replies, sets the hard timeout to a minute and the
// poller's sweep to an hour, so that only the token holder's deadline
// handling can end a follower's call within seconds.

// silentAfter bounds how long a call of these tests may take: its
// deadline is seconds away, the hard timeout a minute.
const silentAfter = 10 * time.Second

// silentClient returns a token-driver client of one fake node that
// answers nothing once connected.
func silentClient(t *testing.T) (*Client, *tokenDriver) {
	t.Helper()
	noSweeps(t)
	cl := startFake(t, 1, fakeserver.Config{})
	c := newTestClient(t, cl.Addrs(), func(cfg *Config) {
		cfg.Scripts = nil
		cfg.Conns = 1
		cfg.HardTimeout = time.Minute
	})
	d, ok := c.drv.(*tokenDriver)
	if !ok {
		t.Skipf("transport %s has no token driver", c.Transport())
	}
	if !c.NodeUp(0) {
		t.Fatalf("node 0 down after New: %v", c.NodeErr(0))
	}
	// Connected (the set-up was answered): from now on the node is silent.
	cl.Nodes[0].Partition(fakeserver.Replies)
	return c, d
}

type waitResult struct {
	out     Outcome
	err     error
	elapsed time.Duration
}

// echoCall runs one ECHO on node 0 and reports how it ended.
func echoCall(c *Client, ctx context.Context, timeout time.Duration, res chan<- waitResult) {
	b := c.NewBatch()
	b.Add(0, resp.AppendCommand(nil, "ECHO", "x"))
	start := time.Now()
	out, err := c.Do(ctx, b, Policy{Timeout: timeout})
	res <- waitResult{out, err, time.Since(start)}
}

// checkExpired checks that a call ended at its deadline, not by the hard
// timeout: pending, with ctx's error when ctx set the deadline.
func checkExpired(t *testing.T, what string, r waitResult, wantErr error) {
	t.Helper()
	if !errors.Is(r.err, wantErr) && !(wantErr == nil && r.err == nil) {
		t.Fatalf("%s: error %v, want %v", what, r.err, wantErr)
	}
	if r.out.Pending != 1 || r.out.Successes != 0 {
		t.Fatalf("%s: %+v, want the node pending", what, r.out)
	}
	if r.elapsed > silentAfter {
		t.Fatalf("%s: returned after %v: its deadline (seconds) was not enforced", what, r.elapsed)
	}
}

// TestFollowersExpireWithoutTimers: followers whose deadline comes after
// the holder's published bound wait with no timer (none falls back), and
// the holders (the leader, then the poller once the leader's call timed
// out) end each of them at its deadline: with Policy.Timeout, and with a
// ctx deadline (context.DeadlineExceeded).
func TestFollowersExpireWithoutTimers(t *testing.T) {
	c, d := silentClient(t)
	lead := make(chan waitResult, 1)
	go echoCall(c, context.Background(), 2*time.Second, lead)
	for d.bound.Load() == 0 || d.waiters.Load() != 0 {
		time.Sleep(time.Millisecond) // the leader has published its wait's bound
	}
	const n = 16
	res := make(chan waitResult, n)
	for i := 0; i < n; i++ {
		if i%2 == 0 {
			go echoCall(c, context.Background(), 3*time.Second, res)
		} else {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			go echoCall(c, ctx, 10*time.Second, res)
		}
	}
	checkExpired(t, "leader", <-lead, nil)
	for i := 0; i < n; i++ {
		r := <-res
		var want error
		if r.err != nil {
			want = context.DeadlineExceeded
		}
		checkExpired(t, fmt.Sprintf("follower %d", i), r, want)
	}
	if got := d.timed.Load(); got != 0 {
		t.Fatalf("%d followers kept a timer; their deadlines all came after the holder's bound", got)
	}
}

// TestFollowerBeforeHolderBound: a follower whose deadline comes before
// the end of the holder's wait (a leader with a long timeout, parked on a
// silent node) keeps a timer of its own and returns at its deadline, not
// when the holder next looks.
func TestFollowerBeforeHolderBound(t *testing.T) {
	c, d := silentClient(t)
	lead := make(chan waitResult, 1)
	go echoCall(c, context.Background(), 2*silentAfter, lead)
	for d.bound.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	res := make(chan waitResult, 1)
	go echoCall(c, context.Background(), 200*time.Millisecond, res)
	checkExpired(t, "follower", <-res, nil)
	if got := d.timed.Load(); got != 1 {
		t.Fatalf("%d followers kept a timer, want 1", got)
	}
	c.Close()
	<-lead
}

// TestFollowersMixedDeadlines: callers with deadlines in no order (the
// registry is not a queue), some with ctx deadlines, some cancelled, come
// and go around a silent node: every call ends by its own deadline's
// rules, none waits for the silence.
func TestFollowersMixedDeadlines(t *testing.T) {
	c, d := silentClient(t)
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	seed := rng.Int63()
	t.Logf("seed %d", seed)
	rng = rand.New(rand.NewSource(seed))
	const n = 200
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		timeout := time.Duration(10+rng.Intn(400)) * time.Millisecond
		kind := rng.Intn(3)
		time.Sleep(time.Duration(rng.Intn(3)) * time.Millisecond)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, want := context.Background(), error(nil)
			switch kind {
			case 1:
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
				timeout, want = time.Minute, context.DeadlineExceeded
			case 2:
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				time.AfterFunc(timeout/2, cancel)
				timeout, want = time.Minute, context.Canceled
			}
			res := make(chan waitResult, 1)
			echoCall(c, ctx, timeout, res)
			r := <-res
			if !errors.Is(r.err, want) && !(want == nil && r.err == nil) {
				errs <- fmt.Errorf("kind %d: error %v, want %v", kind, r.err, want)
			} else if r.elapsed > silentAfter {
				errs <- fmt.Errorf("kind %d (timeout %v): returned after %v", kind, timeout, r.elapsed)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d of %d calls kept a timer", d.timed.Load(), n)
}
