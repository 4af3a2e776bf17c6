package mux

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redmux/redmux/fakeserver"
	"github.com/redmux/redmux/resp"
)

// A claimed writer yields between two writes (writeLocked, writerYield)
// holding the writer role as if inside write. Here the connection breaks
// during some of those yields: the hook aborts it and waits until the
// reader side has detached it, while 64 callers go on queueing ECHOs of
// their own tokens. Every call must end (its own reply, or a node error),
// no reply may be another's, the yielding writer must close the detached
// socket (no descriptor left open once the calls are over) and the
// connection must serve calls again. Bounded by 64 x 200 calls (more
// until a detach during a yield was seen) and 30 s.
func TestWriterYieldSurvivesDetach(t *testing.T) {
	cl := startFake(t, 1, fakeserver.Config{})
	var (
		yields, detached, roleLost, twice atomic.Int64
		cnp                               atomic.Pointer[pconn]
	)
	errYieldTest := errors.New("test: the connection broke during the writer's yield")
	t.Cleanup(func() { writerYield = runtime.Gosched }) // after the client's Close (LIFO)
	// breakLink aborts cn's socket and waits (up to 2 s) until the reader
	// side has detached it.
	breakLink := func(cn *pconn) bool {
		l := cn.current()
		if l == nil {
			return false
		}
		cn.abort(ErrConnBroken, errYieldTest)
		for end := time.Now().Add(2 * time.Second); cn.current() == l && time.Now().Before(end); {
			time.Sleep(50 * time.Microsecond)
		}
		return cn.current() != l
	}
	writerYield = func() {
		cn := cnp.Load()
		if cn != nil && yields.Add(1)%32 == 1 && detached.Load() < 6 && breakLink(cn) {
			detached.Add(1)
			// the role is still this writer's, new socket or not: a
			// caller that found it free would write beside it
			cn.mu.Lock()
			if !cn.writing || !cn.inWrite {
				roleLost.Add(1)
			}
			cn.mu.Unlock()
			// the socket redialled during the yield breaks too: the writer
			// never wrote to it, and it must be closed all the same
			for end := time.Now().Add(2 * time.Second); cn.current() == nil && time.Now().Before(end); {
				time.Sleep(50 * time.Microsecond)
			}
			if breakLink(cn) {
				twice.Add(1)
			}
		}
		runtime.Gosched()
	}
	c := newTestClient(t, cl.Addrs(), func(cfg *Config) {
		cfg.Conns = 1
		cfg.ReconnectMin = time.Millisecond
		cfg.ReconnectMax = 5 * time.Millisecond
	})
	cnp.Store(c.conns[0])
	waitUp(t, c)
	fdsUp := countFDs(t)

	const callers, calls = 64, 200
	var wrong, failed, ok atomic.Int64
	var firstWrong atomic.Value
	end := time.Now().Add(30 * time.Second)
	var wg sync.WaitGroup
	for g := 0; g < callers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := c.NewBatch()
			var cmd []byte
			for i := 0; (i < calls || twice.Load() == 0) && time.Now().Before(end); i++ {
				tok := strconv.Itoa(g) + "." + strconv.Itoa(i)
				b.Reset()
				cmd = resp.AppendCommand(cmd[:0], "ECHO", tok)
				b.Add(0, cmd)
				out, err := c.Do(context.Background(), b, Policy{Timeout: 2 * time.Second})
				if err != nil || out.Successes != 1 {
					failed.Add(1)
					time.Sleep(time.Millisecond) // the node is down until redialled
					continue
				}
				rep, err := b.Reply(0, 0)
				if err != nil || string(rep.Data) != tok {
					if wrong.Add(1) == 1 {
						firstWrong.Store("got " + rep.String() + ", want " + tok)
					}
					continue
				}
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	t.Logf("%d yields, %d connections detached during one (%d also the next socket); %d calls answered, %d failed",
		yields.Load(), detached.Load(), twice.Load(), ok.Load(), failed.Load())
	if n := wrong.Load(); n > 0 {
		t.Fatalf("%d replies were another call's; first: %v", n, firstWrong.Load())
	}
	if n := roleLost.Load(); n > 0 {
		t.Fatalf("%d of %d detaches during a yield took the writer role from the yielding writer", n, detached.Load())
	}
	if total := ok.Load() + failed.Load(); ok.Load() < total/2 {
		t.Fatalf("only %d of %d calls answered", ok.Load(), total)
	}
	if detached.Load() == 0 || twice.Load() == 0 {
		t.Fatalf("%d connections detached during a writer's yield, %d twice (%d yields): the case was not run",
			detached.Load(), twice.Load(), yields.Load())
	}
	cnp.Store(nil)
	waitUp(t, c)
	b := c.NewBatch()
	b.Add(0, resp.AppendCommand(nil, "ECHO", "after"))
	if out, err := c.Do(context.Background(), b, Policy{}); err != nil || out.Successes != 1 {
		t.Fatalf("the connection does not serve calls again: %+v, %v", out, err)
	}
	if fds := settle(func() int { return countFDs(t) }, fdsUp, 3*time.Second); fds > fdsUp {
		t.Fatalf("%d fds open, %d with the client up: a detached socket was left open", fds, fdsUp)
	}
}

// waitUp waits (up to 5 s) until every connection of c has a socket.
func waitUp(t *testing.T, c *Client) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		up := true
		for _, cn := range c.conns {
			up = up && cn.current() != nil
		}
		if up {
			return
		}
	}
	t.Fatal("the client's connections did not come up within 5 s")
}
