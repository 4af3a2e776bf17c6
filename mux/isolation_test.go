package mux

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redmux/redmux/resp"
)

// Issue 23: one bad or slow node, or one bad caller, never hurts the
// others. These tests count (replies, bytes, goroutines); none asserts a
// duration.

func panicOnNode1(node int, r resp.Reply) bool {
	if node == 1 {
		panic("predicate bug")
	}
	return r.IsOK()
}

// A panicking Policy.Success fails its own call with a *PanicError and
// nothing else: callers alongside it (whose replies the panicking call's
// reader may be reading, the poller included) keep getting their replies,
// later calls work, and Close returns.
func TestPolicyPanicIsTheCallsError(t *testing.T) {
	addrs := []string{startHostile(t, nil).addr(), startHostile(t, nil).addr(), startHostile(t, nil).addr()}
	c := newTestClient(t, addrs, func(cfg *Config) { cfg.Scripts = nil })
	const workers, rounds = 16, 50
	var wg sync.WaitGroup
	var panics, goodOK, goodBad atomic.Int64
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			b := c.NewBatch()
			b.Broadcast(resp.AppendCommand(nil, "SET", "k", "v"))
			for r := 0; r < rounds; r++ {
				if w%2 == 0 {
					_, err := c.Do(context.Background(), b, Policy{Success: panicOnNode1})
					var pe *PanicError
					if errors.Is(err, ErrPolicyPanic) && errors.As(err, &pe) && pe.Node == 1 && pe.Value == "predicate bug" {
						panics.Add(1)
					}
					continue
				}
				out, err := c.Do(context.Background(), b, Policy{Success: isOK})
				if err == nil && out.Successes == 3 {
					goodOK.Add(1)
				} else {
					goodBad.Add(1)
				}
			}
		}(w)
	}
	wg.Wait()
	if got, want := panics.Load(), int64(workers/2*rounds); got != want {
		t.Fatalf("%d of %d panicking calls returned a *PanicError", got, want)
	}
	if goodBad.Load() != 0 || goodOK.Load() != workers/2*rounds {
		t.Fatalf("calls beside the panicking ones: %d ok, %d failed", goodOK.Load(), goodBad.Load())
	}
	// A lone caller (it reads its own replies) too, then the client works.
	b := c.NewBatch()
	b.Broadcast(resp.AppendCommand(nil, "SET", "k", "v"))
	if _, err := c.Do(context.Background(), b, Policy{Success: panicOnNode1}); !errors.Is(err, ErrPolicyPanic) {
		t.Fatalf("lone caller: %v", err)
	}
	if out, err := c.Do(context.Background(), b, Policy{Success: isOK}); err != nil || out.Successes != 3 {
		t.Fatalf("after the panics: %+v %v", out, err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

// A batch run again after Do returned early (ctx already cancelled, client
// closed) shows no reply of the earlier call: every node says ErrNotSent.
func TestEarlyReturnClearsResults(t *testing.T) {
	addrs := []string{startHostile(t, nil).addr(), startHostile(t, nil).addr()}
	c := newTestClient(t, addrs, func(cfg *Config) { cfg.Scripts = nil })
	b := c.NewBatch()
	b.Broadcast(resp.AppendCommand(nil, "SET", "k", "v"))
	if out, err := c.Do(context.Background(), b, Policy{Success: isOK}); err != nil || out.Successes != 2 {
		t.Fatalf("%+v %v", out, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Do(ctx, b, Policy{Success: isOK}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled ctx: %v", err)
	}
	for i := 0; i < 2; i++ {
		if rep, err := b.Last(i); !errors.Is(err, ErrNotSent) {
			t.Fatalf("node %d after a cancelled re-run: %q %v (the earlier call's reply?)", i, rep.Data, err)
		}
	}
	if out, err := c.Do(context.Background(), b, Policy{Success: isOK}); err != nil || out.Successes != 2 {
		t.Fatalf("%+v %v", out, err)
	}
	_ = c.Close()
	if _, err := c.Do(context.Background(), b, Policy{Success: isOK}); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
	if err := b.Err(0); !errors.Is(err, ErrNotSent) {
		t.Fatalf("after Close: %v", err)
	}
}
