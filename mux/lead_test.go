package mux

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redmux/redmux/fakeserver"
	"github.com/redmux/redmux/resp"
)

// On Linux a lone caller reads its own replies (it leads, holding the
// reader token); callers that come while it waits follow and are served by
// whoever holds the token after it. These tests cover the hand-overs; the
// portable transport runs them too (there every caller follows).

// TestCancelWhileWaiting: a call whose ctx is cancelled (no deadline) while
// it waits for a node that answers late returns context.Canceled long
// before its timeout, and the late reply is dropped, not given to the next
// call.
func TestCancelWhileWaiting(t *testing.T) {
	cl := startFake(t, 1, fakeserver.Config{})
	c := newTestClient(t, cl.Addrs(), func(cfg *Config) { cfg.Scripts = nil })
	cl.Nodes[0].SetReplyDelay(300*time.Millisecond, 0)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	b := c.NewBatch()
	b.Add(0, resp.AppendCommand(nil, "ECHO", "first"))
	start := time.Now()
	_, err := c.Do(ctx, b, Policy{Timeout: 10 * time.Second})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("cancel noticed after %v (timeout 10s)", d)
	}
	cl.Nodes[0].SetReplyDelay(0, 0)
	b.Reset()
	b.Add(0, resp.AppendCommand(nil, "ECHO", "second"))
	if _, err := c.Do(context.Background(), b, Policy{Timeout: 5 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if r, err := b.Last(0); err != nil || string(r.Data) != "second" {
		t.Fatalf("next call got %q, %v: want its own reply", r.Data, err)
	}
}

// TestFollowerServedAfterLeaderLeaves: the leader's call ends (cancelled)
// while another caller still waits for a slow reply; that caller gets its
// own reply, with no further call to drive the reads.
func TestFollowerServedAfterLeaderLeaves(t *testing.T) {
	for round := 0; round < 5; round++ {
		cl := startFake(t, 1, fakeserver.Config{})
		c := newTestClient(t, cl.Addrs(), func(cfg *Config) { cfg.Scripts = nil })
		cl.Nodes[0].SetReplyDelay(200*time.Millisecond, 0)
		ctx, cancel := context.WithCancel(context.Background())
		leader := make(chan error, 1)
		go func() {
			b := c.NewBatch()
			b.Add(0, resp.AppendCommand(nil, "ECHO", "leader"))
			_, err := c.Do(ctx, b, Policy{Timeout: 10 * time.Second})
			leader <- err
		}()
		time.Sleep(20 * time.Millisecond) // the first caller is waiting (leading)
		follower := make(chan error, 1)
		b := c.NewBatch()
		go func() {
			b.Add(0, resp.AppendCommand(nil, "ECHO", "follower"))
			_, err := c.Do(context.Background(), b, Policy{Timeout: 10 * time.Second})
			follower <- err
		}()
		time.Sleep(20 * time.Millisecond)
		cancel()
		if err := <-leader; !errors.Is(err, context.Canceled) {
			t.Fatalf("round %d: leader: %v", round, err)
		}
		select {
		case err := <-follower:
			if err != nil {
				t.Fatalf("round %d: follower: %v", round, err)
			}
			if r, err := b.Last(0); err != nil || string(r.Data) != "follower" {
				t.Fatalf("round %d: follower got %q, %v", round, r.Data, err)
			}
		case <-time.After(8 * time.Second):
			t.Fatalf("round %d: follower not served after the leader left", round)
		}
	}
}
