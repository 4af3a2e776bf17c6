package mux

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redmux/redmux/redlock/scripts"
	"github.com/redmux/redmux/resp"
)

func lockScripts() []Script {
	out := make([]Script, len(scripts.All))
	for i, s := range scripts.All {
		out[i] = Script{Text: s.Text, SHA: s.SHA}
	}
	return out
}

// newTestClient starts a client with the lock scripts and a short
// reconnect backoff, closed when t ends.
func newTestClient(t testing.TB, addrs []string, mod func(*Config)) *Client {
	t.Helper()
	cfg := Config{
		Addrs:        addrs,
		Conns:        2,
		Timeout:      500 * time.Millisecond,
		Scripts:      lockScripts(),
		ReconnectMin: 10 * time.Millisecond,
		ReconnectMax: 100 * time.Millisecond,
	}
	if mod != nil {
		mod(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// The tests' names for the exported predicates.
var (
	isOK  = ReplyOK
	isOne = ReplyOne
	isInt = ReplyInt
)

var keySeq atomic.Int64

func uniqueKey(prefix string) string {
	return prefix + ":" + strconv.FormatInt(keySeq.Add(1), 10) + ":" + strconv.FormatInt(time.Now().UnixNano(), 36)
}

// broadcast runs one command on every node and waits for all.
func broadcast(t testing.TB, c *Client, p Policy, args ...string) (*Batch, Outcome) {
	t.Helper()
	b := c.NewBatch()
	b.Broadcast(resp.AppendCommand(nil, args...))
	out, err := c.Do(context.Background(), b, p)
	if err != nil {
		t.Fatalf("Do %v: %v", args, err)
	}
	return b, out
}

// waitAllOK waits (bounded) until every node is up again and one broadcast
// PING succeeds on every connection.
func waitAllOK(t testing.TB, c *Client, within time.Duration) {
	t.Helper()
	end := time.Now().Add(within)
	for {
		ok := 0
		for k := 0; k < c.cfg.Conns; k++ {
			b := c.NewBatch()
			b.route = uint32(k)
			b.Broadcast(resp.AppendCommand(nil, "PING"))
			out, err := c.Do(context.Background(), b, Policy{})
			if err == nil && out.Successes == c.N() {
				ok++
			}
		}
		if ok == c.cfg.Conns {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("nodes not all back within %v", within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
