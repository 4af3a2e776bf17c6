package mux

import (
	"strconv"
	"testing"
	"time"

	"github.com/redmux/redmux/internal/redisproc"
	"github.com/redmux/redmux/internal/redisproc/redistest"
	"github.com/redmux/redmux/resp"
)

// The flush watch on a real redis-server (Config.WatchFlushes): FLUSHALL,
// FLUSHDB of another database and a full resync (REPLICAOF a server, then
// REPLICAOF NO ONE) each keep the client's connections, and each is noted
// before the reply of the next command on them is delivered (the push
// comes first on the connection: no waiting).
func TestRealFlushWatch(t *testing.T) {
	srv := redistest.StartN(t, 2, redistest.Options{Extra: []string{"--repl-diskless-sync-delay", "0"}})
	c := newTestClient(t, redistest.Addrs(srv[:1]), func(cfg *Config) { cfg.Incarnations, cfg.WatchFlushes, cfg.Conns = true, true, 2 })
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
		do()
		for k := 0; k < 4; k++ { // every connection's next reply (2 conns)
			if err := setNode0(c, key, "x"); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		}
		f := c.LastFlush(0)
		if f == nil || f.N <= last {
			t.Fatalf("%s: not noted before the next replies: %+v (had %d)", what, f, last)
		}
		t.Logf("%s: noted %d time(s), once per connection", what, f.N-last)
		last = f.N
	}
	cmd := func(args ...string) {
		t.Helper()
		if _, err := redisproc.Command(srv[0].Addr, "", args...); err != nil {
			t.Fatal(args, err)
		}
	}
	step("FLUSHALL", func() { cmd("FLUSHALL") })
	step("FLUSHDB of db 5", func() { cmd("SELECT", "5"); cmd("FLUSHDB") })
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
	if got := c.Incarnation(0); got != inc {
		t.Logf("set up again meanwhile (allowed): %+v", got)
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
