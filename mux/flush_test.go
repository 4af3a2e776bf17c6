package mux

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redmux/redmux/internal/redisproc"
	"github.com/redmux/redmux/internal/redisproc/redistest"
	"github.com/redmux/redmux/resp"
)

// The flush watch on a real redis-server (Config.WatchFlushes): FLUSHALL,
// FLUSHDB of another database and a full resync (REPLICAOF a server, then
// REPLICAOF NO ONE) each keep the client's connections open, and each is
// noted before the outcome of the next command on them is known (the push
// comes first on the connection: no waiting); the connection is set up
// again (that command fails with it, unless the reader read the push
// before) and learns the node's incarnation anew (the resync's new
// replication history). A set-up while the node is still a replica is
// refused (the reader that reads all along reads the resync's push then),
// and the node is set up again once promoted: the history learned is the
// promoted one's, never the source's.
func TestRealFlushWatch(t *testing.T) {
	srv := redistest.StartN(t, 2, redistest.Options{Extra: []string{"--repl-diskless-sync-delay", "0"}})
	c := newTestClient(t, redistest.Addrs(srv[:1]), func(cfg *Config) { cfg.Incarnations, cfg.WatchFlushes, cfg.Conns = true, true, 1 })
	key := uniqueKey("flush")
	if err := setNode0(c, key, "x"); err != nil {
		t.Fatal(err)
	}
	inc := c.Incarnation(0)
	if inc == nil || !inc.WatchesFlushes {
		t.Fatalf("incarnation %+v: the watch is not on", inc)
	}
	if f := c.LastFlush(0); f != nil {
		t.Fatalf("a flush before any: %+v", f)
	}
	var last uint64
	step := func(what string, do func()) {
		t.Helper()
		before := c.Incarnation(0)
		do()
		err := setNode0(c, key, "x")
		f := c.LastFlush(0)
		if f == nil || f.N <= last {
			t.Fatalf("%s: not noted when the next command's outcome came (%v): %+v (had %d)", what, err, f, last)
		}
		// the connection read the push and was set up again: at this
		// command (a reader that reads only while a call waits), or before
		// it (one that reads all along: the portable transport; the
		// command may then find the redial still in progress, or a
		// replica's set-up refused)
		replaced := false
		for _, e := range []error{errFlushed, errNotConnected, errReplicaSetup} {
			replaced = replaced || err != nil && strings.Contains(err.Error(), e.Error())
		}
		if err != nil && !replaced || err == nil && c.Incarnation(0) == before {
			t.Fatalf("%s: the next command on the connection: %v (incarnation %p, was %p), want the connection set up again", what, err, c.Incarnation(0), before)
		}
		last = f.N
		end := time.Now().Add(10 * time.Second)
		for setNode0(c, key, "x") != nil || c.Incarnation(0) == before {
			if time.Now().After(end) {
				t.Fatalf("%s: not set up again: %+v, %v", what, c.Incarnation(0), c.NodeErr(0))
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Logf("%s: noted, set up again (history %s, was %s)", what, c.Incarnation(0).ReplID, before.ReplID)
	}
	cmd := func(args ...string) {
		t.Helper()
		if _, err := redisproc.Command(srv[0].Addr, "", args...); err != nil {
			t.Fatal(args, err)
		}
	}
	step("FLUSHALL", func() { cmd("FLUSHALL") })
	step("FLUSHDB of db 5", func() { cmd("SELECT", "5"); cmd("FLUSHDB") })
	old := c.Incarnation(0)
	step("a full resync", func() {
		cmd("REPLICAOF", "127.0.0.1", strconv.Itoa(srv[1].Port))
		end := time.Now().Add(10 * time.Second)
		for {
			r, err := redisproc.Command(srv[0].Addr, "", "INFO", "replication")
			if s, _ := r.(string); err == nil && containsLine(s, "master_link_status:up") {
				break
			}
			if time.Now().After(end) {
				t.Fatal("never synced")
			}
			time.Sleep(20 * time.Millisecond)
		}
		cmd("REPLICAOF", "NO", "ONE")
	})
	// the same process with the promoted history: not the source's, which
	// a set-up during the replica phase would have learned
	src, err := redisproc.Command(srv[1].Addr, "", "INFO", "replication")
	if err != nil {
		t.Fatal(err)
	}
	srcInfo, _ := src.(string)
	if now := c.Incarnation(0); now.RunID != old.RunID || now.ReplID == old.ReplID || !now.Promoted ||
		strings.Contains(srcInfo, "master_replid:"+now.ReplID) {
		t.Fatalf("after the resync and promotion: %+v, want the same process with the promoted history (was %+v; the source's INFO: %q)", now, old, srcInfo)
	}
}

// A node that refuses HELLO (renamed away, as a proxy or an older server
// would) is set up without the watch, in RESP2, and works.
func TestRealFlushWatchRefused(t *testing.T) {
	srv := redistest.StartN(t, 1, redistest.Options{Extra: []string{"--rename-command", "HELLO", "hello-renamed-away"}})
	c := newTestClient(t, redistest.Addrs(srv), func(cfg *Config) { cfg.Incarnations, cfg.WatchFlushes = true, true })
	key := uniqueKey("noflush")
	if err := setNode0(c, key, "x"); err != nil {
		t.Fatal(err)
	}
	inc := c.Incarnation(0)
	if inc == nil || !inc.Known || inc.WatchesFlushes {
		t.Fatalf("incarnation %+v: want known, without the watch", inc)
	}
	b := c.NewBatch()
	b.Add(0, resp.AppendCommand(nil, "GET", "absent:"+key))
	if _, err := c.Do(t.Context(), b, Policy{Timeout: time.Second}); err != nil {
		t.Fatal(err)
	}
	if r, err := b.Last(0); err != nil || !r.Null || r.Type != resp.TypeBulkString {
		t.Fatalf("GET of an absent key: %v %+v, want RESP2's null bulk string", err, r)
	}
}

func containsLine(s, line string) bool {
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != '\n' {
			i++
		}
		l := s[:i]
		if len(l) > 0 && l[len(l)-1] == '\r' {
			l = l[:len(l)-1]
		}
		if l == line {
			return true
		}
		if i == len(s) {
			break
		}
		s = s[i+1:]
	}
	return false
}
