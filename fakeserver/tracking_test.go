package fakeserver

import (
	"testing"
	"time"
)

// A tracking RESP3 connection is told of every way the fake's data set is
// flushed or replaced, ahead of its next reply: FLUSHALL and FLUSHDB from
// another connection, Flush (a wipe) and Resync (a full resync), each
// once; a connection with tracking off, or in RESP2, is told nothing.
func TestTrackingFlushPush(t *testing.T) {
	n := startNode(t, Config{})
	src := startNode(t, Config{})
	tr, other, plain := dial(t, n.Addr()), dial(t, n.Addr()), dial(t, n.Addr())
	tr.do("HELLO", "3")
	eqReply(t, "tracking on", tr.do("CLIENT", "TRACKING", "ON", "OPTIN"), "+OK\r\n")
	eqReply(t, "resp2 tracking on", plain.do("CLIENT", "TRACKING", "ON", "OPTIN"), "+OK\r\n")
	const push = ">2\r\n$10\r\ninvalidate\r\n_\r\n"
	for _, f := range []struct {
		what string
		do   func()
	}{
		{"FLUSHALL", func() { other.do("FLUSHALL") }},
		{"FLUSHDB of db 2", func() { other.do("SELECT", "2"); other.do("FLUSHDB") }},
		{"Flush", n.Flush},
		{"Resync", func() { n.Resync(src) }},
		{"ResyncLag", func() { n.ResyncLag(time.Second) }},
	} {
		eqReply(t, "before "+f.what, tr.do("PING"), "+PONG\r\n")
		f.do()
		eqReply(t, f.what+": the push first", tr.do("PING"), push)
		eqReply(t, f.what+": then the reply", tr.read(), "+PONG\r\n")
		eqReply(t, f.what+": once", tr.do("PING"), "+PONG\r\n")
		eqReply(t, f.what+": RESP2 told nothing", plain.do("PING"), "+PONG\r\n")
	}
	eqReply(t, "tracking off", tr.do("CLIENT", "TRACKING", "OFF"), "+OK\r\n")
	other.do("FLUSHALL")
	eqReply(t, "off: told nothing", tr.do("PING"), "+PONG\r\n")
	if r := tr.do("CLIENT", "TRACKING", "ON", "BCAST"); !hasPrefix(r, "-ERR the fake server tracks no keys") {
		t.Fatalf("BCAST: %q", r)
	}
}

// ResyncLag keeps the process and the keys older than its lag (the
// marker a client accepted among them), loses the newer ones, and starts
// a new replication history.
func TestResyncLag(t *testing.T) {
	n := startNode(t, Config{})
	c := dial(t, n.Addr())
	c.do("SET", "old", "1")
	time.Sleep(30 * time.Millisecond)
	c.do("SET", "new", "1")
	run, repl, gen := n.RunID(), n.life.Load().replID, n.DataGen()
	n.ResyncLag(15 * time.Millisecond)
	eqReply(t, "old kept", c.do("GET", "old"), bulk("1"))
	eqReply(t, "new lost", c.do("GET", "new"), "$-1\r\n")
	if n.RunID() != run || n.life.Load().replID == repl || n.DataGen() == gen {
		t.Fatalf("run_id %s (was %s), replid %s (was %s), data gen %d (was %d): want the same process, a new history, a new data set",
			n.RunID(), run, n.life.Load().replID, repl, n.DataGen(), gen)
	}
}

// A node that refuses CLIENT TRACKING (Config.RefuseTracking, or
// RefuseTracking) answers NOPERM, as Redis answers a user whose ACL
// forbids it.
func TestTrackingRefused(t *testing.T) {
	n := startNode(t, Config{RefuseTracking: true})
	c := dial(t, n.Addr())
	c.do("HELLO", "3")
	const noperm = "-NOPERM this user has no permissions to run the 'client|tracking' command\r\n"
	eqReply(t, "refused", c.do("CLIENT", "TRACKING", "ON", "OPTIN"), noperm)
	n.RefuseTracking(false)
	eqReply(t, "allowed", c.do("CLIENT", "TRACKING", "ON", "OPTIN"), "+OK\r\n")
}
