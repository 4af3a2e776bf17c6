package mux

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redmux/redmux/resp"
)

const noscriptReply = "-NOSCRIPT No matching script. Please use EVAL.\r\n"

// evalEchoes answers every EVALSHA with NOSCRIPT and every EVAL with its
// last argument (a value unique to the call), so a reply names the call it
// belongs to; a last argument "big" gets a bulk of big bytes instead.
func evalEchoes(big int) func(*hconn, [][]byte, []byte) []byte {
	return func(_ *hconn, args [][]byte, r []byte) []byte {
		switch string(args[0]) {
		case "EVALSHA":
			return []byte(noscriptReply)
		case "EVAL":
			if last := args[len(args)-1]; string(last) != "big" {
				return resp.AppendBulk(nil, last)
			}
			return resp.AppendBulkString(nil, strings.Repeat("b", big))
		}
		return r
	}
}

// evalsha is EVALSHA of c's first script with one key and the argument v.
func evalsha(c *Client, key, v string) []byte {
	return resp.AppendCommand(nil, "EVALSHA", c.cfg.Scripts[0].SHA, "1", key, v)
}

// isNoScriptErr reports whether err is the node's NOSCRIPT error reply.
func isNoScriptErr(err error) bool {
	var se *ServerError
	return errors.As(err, &se) && strings.HasPrefix(se.Text, "NOSCRIPT")
}

// The EVAL fallback obeys MaxQueuedBytes as a caller's command does: on an
// idle connection it goes even when the script's text alone is over the
// cap (a lone command larger than a cap still goes when nothing is
// queued), and the EVAL's reply reaches the call that sent the EVALSHA.
func TestNoScriptFallbackOverCapOnIdleConnGoes(t *testing.T) {
	h := startHostile(t, func(h *hostile) { h.reply = evalEchoes(0) })
	text := "return ARGV[1] --" + strings.Repeat("x", 8<<10)
	c := newTestClient(t, []string{h.addr()}, func(cfg *Config) {
		cfg.Conns = 1
		cfg.Scripts = []Script{{Text: text}}
		cfg.MaxQueuedBytes = 1024
		cfg.Timeout = 5 * time.Second
	})
	b := c.NewBatch()
	for k, v := range []string{"first", "second"} {
		b.Reset()
		b.Add(0, evalsha(c, "k", v))
		if _, err := c.Do(context.Background(), b, Policy{}); err != nil {
			t.Fatal(err)
		}
		rep, err := b.Last(0)
		if err != nil || string(rep.Data) != v || !b.call.result(0, 0).retried || h.evals.Load() != int64(k+1) {
			t.Fatalf("call %d: reply %q, err %v, retried %v, %d EVAL sent: want %q by the fallback",
				k, rep.Data, err, b.call.result(0, 0).retried, h.evals.Load(), v)
		}
	}
}

// The queue's byte cap counts bytes only while a reply is outstanding: a
// reply in hand proves its command's bytes were written, so with none
// outstanding the bytes of a writer not yet back from its write() hold
// nothing up. The NOSCRIPT fallback (queueInternal, on the reader's path)
// met that race: the EVALSHA's reply came before its writer cleared
// inflight, and the fallback was refused as over the cap (1 to 2 in 20 of
// TestNoScriptFallbackOverCapOnIdleConnGoes on the portable transport).
func TestFullCountsOnlyUnansweredBytes(t *testing.T) {
	h := startHostile(t, func(*hostile) {})
	c := newTestClient(t, []string{h.addr()}, func(cfg *Config) {
		cfg.Scripts, cfg.Conns, cfg.MaxQueuedBytes = nil, 1, 1024
	})
	cn := c.conns[0]
	cn.mu.Lock()
	defer cn.mu.Unlock()
	saved := cn.inflight
	defer func() { cn.inflight = saved }()
	cn.inflight = 600 // a writer still in write() with what was answered
	if err := cn.full(8<<10, 1); err != nil {
		t.Fatalf("nothing outstanding, %d bytes in a returning write: %v", cn.inflight, err)
	}
	cn.q.push(slot{}) // a reply outstanding: the bytes may not be written yet
	defer cn.q.pop()
	if err := cn.full(8<<10, 1); err != errQueueFull {
		t.Fatalf("a reply outstanding, %d bytes in flight: %v, want errQueueFull", cn.inflight, err)
	}
	if err := cn.full(100, 1); err != nil {
		t.Fatalf("under the cap: %v", err)
	}
}

// queued is how many bytes connection cn holds unwritten and how many
// replies it awaits; stuck says its writer waits for a full socket.
func queued(cn *pconn) (bytes, slots int, stuck bool) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return len(cn.wq) + cn.inflight, cn.q.n, cn.waitOut && !cn.inWrite
}

// A NOSCRIPT that arrives while the connection's queue holds more than
// MaxQueuedBytes unwritten (a large command behind the EVALSHA, a node
// that stopped reading): the fallback, sent from the reader's path, which
// must not wait, is not queued; the call gets the node's NOSCRIPT error,
// nothing is added to the queue, the large command completes once the node
// reads again, and the next EVALSHA takes the fallback.
func TestNoScriptFallbackRefusedWhenQueueFull(t *testing.T) {
	arrived, queue, release := make(chan struct{}), make(chan struct{}), make(chan struct{})
	h := startHostile(t, func(h *hostile) {
		var once atomic.Bool
		h.reply = func(cn *hconn, args [][]byte, r []byte) []byte {
			if string(args[0]) != "EVALSHA" || once.Swap(true) {
				return evalEchoes(0)(cn, args, r)
			}
			close(arrived)
			select { // NOSCRIPT only once the client's queue is over the cap
			case <-queue:
			case <-h.done:
				return nil
			}
			_ = cn.send([]byte(noscriptReply))
			select { // and no reading until the test says
			case <-release:
			case <-h.done:
			}
			return nil
		}
	})
	const maxQ = 4096
	c := newTestClient(t, []string{h.addr()}, func(cfg *Config) {
		cfg.Conns = 1
		cfg.MaxQueuedBytes = maxQ
		cfg.Timeout = 30 * time.Second
		cfg.HardTimeout = 30 * time.Second
	})
	evalDone := make(chan *Batch, 1)
	go func() {
		b := c.NewBatch()
		b.Add(0, evalsha(c, "k", "v1"))
		_, _ = c.Do(context.Background(), b, Policy{})
		evalDone <- b
	}()
	<-arrived
	bigDone := make(chan error, 1)
	go func() {
		b := c.NewBatch()
		b.Add(0, resp.AppendCommand(nil, "SET", "big", strings.Repeat("y", 8<<20)))
		_, err := c.Do(context.Background(), b, Policy{})
		bigDone <- errors.Join(err, b.Err(0))
	}()
	q0, n0, stuck := queued(c.conns[0])
	for end := time.Now().Add(20 * time.Second); q0 <= maxQ || !stuck || n0 != 2; q0, n0, stuck = queued(c.conns[0]) {
		if time.Now().After(end) {
			t.Fatalf("the large SET never filled the queue: %d bytes queued (stuck %v), %d replies due", q0, stuck, n0)
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("%d bytes queued behind the EVALSHA", q0)
	close(queue)
	var b *Batch
	select {
	case b = <-evalDone:
	case <-time.After(30 * time.Second):
		t.Fatal("the EVALSHA call never returned")
	}
	_, err := b.Last(0)
	// the SET's reply is the one due: no EVAL, no SCRIPT LOAD queued
	if q1, n1, _ := queued(c.conns[0]); !isNoScriptErr(err) || b.call.result(0, 0).retried || h.evals.Load() != 0 || q1 > q0 || n1 != 1 {
		t.Fatalf("err %v, retried %v, %d EVAL sent, queued %d -> %d bytes, %d replies due: want NOSCRIPT, no fallback queued",
			err, b.call.result(0, 0).retried, h.evals.Load(), q0, q1, n1)
	}
	close(release)
	select {
	case err := <-bigDone:
		if err != nil {
			t.Fatalf("the large SET: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the large SET never completed")
	}
	b.Reset()
	b.Add(0, evalsha(c, "k", "v2"))
	if _, err := c.Do(context.Background(), b, Policy{}); err != nil {
		t.Fatal(err)
	}
	if rep, err := b.Last(0); err != nil || string(rep.Data) != "v2" || h.evals.Load() != 1 {
		t.Fatalf("the next EVALSHA: %q %v, %d EVAL sent: want v2 by the fallback", rep.Data, err, h.evals.Load())
	}
}

// An EVAL fallback whose reply is over MaxReplyBytes breaks the connection
// (ErrProtocol, reply too big) and fails only what was due on it: the
// batch's command before the EVAL, answered first, keeps its reply; the
// supervisor redials, and the next fallback with a small reply succeeds.
func TestNoScriptFallbackReplyOverMaxReplyBytes(t *testing.T) {
	const maxR = 1024
	h := startHostile(t, func(h *hostile) { h.reply = evalEchoes(4 * maxR) })
	c := newTestClient(t, []string{h.addr()}, func(cfg *Config) {
		cfg.Conns = 1
		cfg.MaxReplyBytes = maxR
		cfg.Timeout = 5 * time.Second
	})
	b := c.NewBatch()
	b.Add(0, evalsha(c, "k", "big"))
	b.Add(0, resp.AppendCommand(nil, "ECHO", "after"))
	if _, err := c.Do(context.Background(), b, Policy{}); err != nil {
		t.Fatal(err)
	}
	_, err := b.Reply(0, 0)
	echo, echoErr := b.Reply(0, 1)
	if !errors.Is(err, ErrProtocol) || !errors.Is(err, errReplyTooBig) || echoErr != nil || string(echo.Data) != "after" || h.evals.Load() != 1 {
		t.Fatalf("EVAL: %v; ECHO: %q %v; %d EVAL sent: want the EVAL failed by ErrProtocol (too big), ECHO answered",
			err, echo.Data, echoErr, h.evals.Load())
	}
	end := time.Now().Add(10 * time.Second)
	for {
		b.Reset()
		b.Add(0, evalsha(c, "k", "small"))
		if _, err := c.Do(context.Background(), b, Policy{}); err != nil {
			t.Fatal(err)
		}
		rep, err := b.Last(0)
		if err == nil {
			if string(rep.Data) != "small" || !b.call.result(0, 0).retried {
				t.Fatalf("after the redial: %q (retried %v), want small by the fallback", rep.Data, b.call.result(0, 0).retried)
			}
			return
		}
		if !errors.Is(err, ErrNodeDown) || time.Now().After(end) {
			t.Fatalf("after the oversized reply: %v, want the node down until redialled, then the fallback", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Many callers hit NOSCRIPT at once with small caps: every call returns,
// each with its own values (the EVAL's reply is its EVALSHA's argument, the
// ECHO behind it its own) or with a cap's error (the node's NOSCRIPT when
// the fallback found the queue full; a timeout waiting for room), never
// another call's reply.
func TestNoScriptFallbackConcurrentUnderCaps(t *testing.T) {
	h := startHostile(t, func(h *hostile) { h.reply = evalEchoes(0) })
	c := newTestClient(t, []string{h.addr()}, func(cfg *Config) {
		cfg.Conns = 2
		cfg.MaxQueuedBytes = 2048
		cfg.MaxReplyBytes = 128
		cfg.MaxPending = 8
		cfg.Timeout = 10 * time.Second
	})
	const callers, calls = 16, 40
	type tally struct{ ok, noscript, timeout int }
	results := make(chan tally, callers)
	bad := make(chan string, callers)
	for g := 0; g < callers; g++ {
		go func() {
			var n tally
			b := c.NewBatch()
			for k := 0; k < calls; k++ {
				v, w := "v"+strconv.Itoa(g)+":"+strconv.Itoa(k), "w"+strconv.Itoa(g)+":"+strconv.Itoa(k)
				b.Reset()
				b.SetKey(v)
				b.Add(0, evalsha(c, v, v))
				b.Add(0, resp.AppendCommand(nil, "ECHO", w))
				if _, err := c.Do(context.Background(), b, Policy{}); err != nil {
					bad <- err.Error()
					return
				}
				ev, evErr := b.Reply(0, 0)
				echo, echoErr := b.Reply(0, 1)
				switch {
				case echoErr == nil && string(echo.Data) != w, evErr == nil && string(ev.Data) != v:
					bad <- fmt.Sprintf("call %s: EVAL %q, ECHO %q: another call's reply", v, ev.Data, echo.Data)
					return
				case evErr == nil && echoErr == nil:
					n.ok++
				case isNoScriptErr(evErr) && echoErr == nil:
					n.noscript++
				case errors.Is(evErr, ErrTimeout) && (errors.Is(evErr, errQueueFull) || errors.Is(evErr, errTooManyPending)):
					n.timeout++
				default:
					bad <- fmt.Sprintf("call %s: EVAL %v, ECHO %v: not a cap's error", v, evErr, echoErr)
					return
				}
			}
			results <- n
		}()
	}
	var sum tally
	timeout := time.After(120 * time.Second)
	for g := 0; g < callers; g++ {
		select {
		case n := <-results:
			sum.ok, sum.noscript, sum.timeout = sum.ok+n.ok, sum.noscript+n.noscript, sum.timeout+n.timeout
		case msg := <-bad:
			t.Fatal(msg)
		case <-timeout:
			t.Fatalf("%d of %d callers still in Do after 120 s", callers-g, callers)
		}
	}
	t.Logf("%d calls: %d by the fallback, %d NOSCRIPT (queue full), %d timed out waiting for room; %d EVAL sent",
		callers*calls, sum.ok, sum.noscript, sum.timeout, h.evals.Load())
	if sum.ok == 0 || h.evals.Load() < int64(sum.ok) {
		t.Fatalf("%d calls succeeded, %d EVAL sent: want the fallback to work under the caps", sum.ok, h.evals.Load())
	}
}
