package fakeserver

import (
	"testing"
	"time"
)

// While a script is busy, a transaction is refused as redis-server 7.0.15
// refuses it (the replies below are its own): commands sent after MULTI get
// BUSY instead of QUEUED, and EXEC, with or without MULTI, answers EXECABORT
// and discards the transaction and the watches. The fake used to queue
// them, answer EXEC with BUSY and keep MULTI open.
func TestMultiWhileScriptBusy(t *testing.T) {
	n := startNode(t, Config{ScriptBusyAfter: 50 * time.Millisecond, ScriptKillAfter: time.Minute})
	a, b, c := dial(t, n.Addr()), dial(t, n.Addr()), dial(t, n.Addr())
	busy := errReply(busyErr)
	abort := errReply("EXECABORT Transaction discarded because of: " + busyErr)

	eqReply(t, "set w", b.do("SET", "w", "1"), okReply)
	eqReply(t, "watch", b.do("WATCH", "w"), okReply)
	eqReply(t, "multi", b.do("MULTI"), okReply)
	eqReply(t, "queued before", b.do("SET", "x", "1"), "+QUEUED\r\n")

	a.send("EVAL", "while true do end", "0")
	waitFor(t, 10*time.Second, n.lua.busy.Load, "the script never turned busy")

	for _, step := range []struct {
		c    *tconn
		args []string
		want string
	}{
		{b, []string{"SET", "y", "1"}, busy},
		{b, []string{"PING"}, busy},
		{b, []string{"EXEC"}, abort},
		{b, []string{"SET", "x", "2"}, busy}, // MULTI is over
		{b, []string{"EXEC"}, abort},
		{c, []string{"MULTI"}, okReply},
		{c, []string{"SET", "z", "1"}, busy},
		{c, []string{"SCRIPT", "KILL"}, "+QUEUED\r\n"}, // allow-busy: queued
		{c, []string{"EXEC"}, abort},
		{c, []string{"DISCARD"}, errReply("ERR DISCARD without MULTI")},
		{c, []string{"EXEC"}, abort}, // no MULTI: aborted all the same
	} {
		eqReply(t, step.args[0], step.c.do(step.args...), step.want)
	}
	eqReply(t, "kill", dial(t, n.Addr()).do("SCRIPT", "KILL"), okReply)
	if r := a.read(); !hasPrefix(r, "-ERR Script killed by user with SCRIPT KILL...") {
		t.Errorf("script replied %q", r)
	}
	eqReply(t, "nothing ran", b.do("MGET", "x", "y", "z"), "*3\r\n$-1\r\n$-1\r\n$-1\r\n")
	// b's WATCH went with its aborted transaction: a write to w no longer
	// fails its next one.
	eqReply(t, "write w", c.do("SET", "w", "2"), okReply)
	eqReply(t, "multi again", b.do("MULTI"), okReply)
	eqReply(t, "queued", b.do("SET", "x", "3"), "+QUEUED\r\n")
	eqReply(t, "exec", b.do("EXEC"), "*1\r\n+OK\r\n")
	n.mu.Lock()
	watched := len(n.watched)
	n.mu.Unlock()
	if watched != 0 {
		t.Errorf("%d watched keys left after the transactions", watched)
	}
}
