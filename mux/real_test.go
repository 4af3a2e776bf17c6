package mux

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redmux/redmux/internal/redisproc"
	"github.com/redmux/redmux/internal/redisproc/redistest"
	"github.com/redmux/redmux/resp"
)

func TestRealCore(t *testing.T) {
	srv := redistest.StartN(t, 5, redistest.Options{})
	c := newTestClient(t, redistest.Addrs(srv), nil)
	runCore(t, c)
}

func TestRealRESP3Select(t *testing.T) {
	srv := redistest.StartN(t, 5, redistest.Options{})
	c := newTestClient(t, redistest.Addrs(srv), func(cfg *Config) { cfg.RESP3 = true; cfg.DB = 3 })
	runCore(t, c)
	// Keys went to db 3.
	key := uniqueKey("db")
	broadcast(t, c, Policy{}, "SET", key, "1")
	plain := newTestClient(t, redistest.Addrs(srv), nil)
	b, _ := broadcast(t, plain, Policy{}, "EXISTS", key)
	for i := 0; i < 5; i++ {
		if r, err := b.Last(i); err != nil || r.N != 0 {
			t.Fatalf("node %d: key visible in db 0: %v %v", i, r, err)
		}
	}
}

func TestRealAuth(t *testing.T) {
	const pw = "s3cret-pass-word"
	srv := redistest.StartN(t, 5, redistest.Options{Password: pw})
	addrs := redistest.Addrs(srv)
	c := newTestClient(t, addrs, func(cfg *Config) { cfg.Password = pw })
	testAllReplies(t, c)

	bad := newTestClient(t, addrs, func(cfg *Config) { cfg.Password = "wrong-" + pw })
	checkAuthFailed(t, bad, pw)
	none := newTestClient(t, addrs, nil)
	checkAuthFailed(t, none, pw)
}

func checkAuthFailed(t *testing.T, c *Client, pw string) {
	t.Helper()
	b := c.NewBatch()
	b.Broadcast(resp.AppendCommand(nil, "PING"))
	out, err := c.Do(context.Background(), b, Policy{})
	if err != nil {
		t.Fatal(err)
	}
	if out.Failures != c.N() {
		t.Fatalf("auth failure: %+v", out)
	}
	// Failing fast, counted rather than timed: every node is down with the
	// AUTH failure as its cause, none timed out waiting.
	for i := 0; i < c.N(); i++ {
		if err := b.Err(i); !errors.Is(err, ErrNodeDown) || !errors.Is(err, ErrAuth) || errors.Is(err, ErrTimeout) {
			t.Errorf("node %d: %v, want down with AUTH failed", i, err)
		}
	}
	for i := 0; i < c.N(); i++ {
		err := b.Err(i)
		if !errors.Is(err, ErrNodeDown) || !errors.Is(err, ErrAuth) {
			t.Fatalf("node %d: %v", i, err)
		}
		if contains(err.Error(), pw) {
			t.Fatalf("password in error: %v", err)
		}
		if !errors.Is(c.NodeErr(i), ErrAuth) || c.NodeUp(i) {
			t.Fatalf("NodeErr %d: %v", i, c.NodeErr(i))
		}
	}
	t.Logf("auth error: %v", b.Err(0))
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// TestRealQuorumEarlyPaused pauses one real redis-server (SIGSTOP): a
// quorum batch decides without it, and once it resumes, its owed reply is
// skipped and the next batch on that connection reads its own reply.
func TestRealQuorumEarlyPaused(t *testing.T) {
	srv := redistest.StartN(t, 5, redistest.Options{})
	c := newTestClient(t, redistest.Addrs(srv), func(cfg *Config) { cfg.Conns = 2 })
	testQuorumEarly(t, c, func() { _ = srv[4].Pause() }, func() { _ = srv[4].Resume() }, 4)
}

// A plain node made a replica behind the client's back (REPLICAOF, which
// keeps every connection) answers READONLY: the reply is delivered, then
// the connection is replaced. Its set-up is refused while the node is a
// replica (a promotion would keep the connection, and what the set-up
// learned would stand for the primary it becomes); once it is promoted
// (REPLICAOF NO ONE) the set-up learns the new history, promoted, which
// redlock judges a failover (docs/OPERATIONS.md, rule 2; docs/FENCING.md,
// "Raise first", attack 4b).
func TestRealReadOnlyPlainNode(t *testing.T) {
	srv := redistest.StartN(t, 2, redistest.Options{})
	c := newTestClient(t, redistest.Addrs(srv[:1]), func(cfg *Config) { cfg.Incarnations = true })
	key := uniqueKey("ro")
	if err := setNode0(c, key, "x"); err != nil {
		t.Fatal(err)
	}
	before := c.Incarnation(0)
	if before == nil || before.Role != "master" {
		t.Fatalf("incarnation before: %+v", before)
	}
	if _, err := redisproc.Command(srv[0].Addr, "", "REPLICAOF", "127.0.0.1", strconv.Itoa(srv[1].Port)); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = redisproc.Command(srv[0].Addr, "", "REPLICAOF", "NO", "ONE") }()
	err := setNode0(c, key, "y")
	var se *ServerError
	if !errors.As(err, &se) || !strings.HasPrefix(se.Text, "READONLY") {
		t.Fatalf("write to the node made a replica: %v, want READONLY", err)
	}
	end := time.Now().Add(10 * time.Second)
	for {
		if e := c.NodeErr(0); e != nil && strings.Contains(e.Error(), "role:slave") {
			t.Logf("set-up refused: %v", e)
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the set-up of a replica was not refused: incarnation %+v, node error %v", c.Incarnation(0), c.NodeErr(0))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if inc := c.Incarnation(0); inc != before {
		t.Fatalf("a replica's set-up was learned: %+v", inc)
	}
	if _, err := redisproc.Command(srv[0].Addr, "", "REPLICAOF", "NO", "ONE"); err != nil {
		t.Fatal(err)
	}
	end = time.Now().Add(10 * time.Second)
	for {
		_ = setNode0(c, key, "z") // the supervisor redials with backoff; a write waits for it
		inc := c.Incarnation(0)
		if inc != before && inc != nil {
			if inc.Role != "master" || !inc.Promoted || inc.ReplID == before.ReplID {
				t.Fatalf("set up again after the promotion: %+v, want a promoted master with a new history (was %s)", inc, before.ReplID)
			}
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the node was not set up again after its promotion: incarnation %+v, node error %v", inc, c.NodeErr(0))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
