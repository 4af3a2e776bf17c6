package fakeserver

import (
	"testing"
	"time"
)

// A real Redis never persists EVAL scripts: after any restart, data kept or
// not, and after a failover to a replica, EVALSHA answers NOSCRIPT.
func TestScriptCacheEmptyAfterRestartAndFailover(t *testing.T) {
	const script = "return 'hi'"
	sha := sha1Hex([]byte(script))
	noscript := errReply("NOSCRIPT No matching script. Please use EVAL.")
	n := startNode(t, Config{})
	load := func(what string) {
		t.Helper()
		c := dial(t, n.Addr())
		eqReply(t, what+": load", c.do("SCRIPT", "LOAD", script), bulk(sha))
		eqReply(t, what+": cached", c.do("EVALSHA", sha, "0"), bulk("hi"))
	}
	gone := func(what string) {
		t.Helper()
		c := dial(t, n.Addr())
		eqReply(t, what+": exists", c.do("SCRIPT", "EXISTS", sha), "*1\r\n:0\r\n")
		eqReply(t, what+": evalsha", c.do("EVALSHA", sha, "0"), noscript)
	}

	load("FAKE RESTART KEEP")
	adm := dial(t, n.Addr())
	eqReply(t, "restart keep", adm.do("FAKE", "RESTART", "KEEP"), okReply)
	waitFor(t, 10*time.Second, func() bool { return n.Stats().Restarts == 1 }, "FAKE RESTART KEEP did not restart")
	gone("FAKE RESTART KEEP")

	load("Restart(false)")
	if err := n.Restart(false, 0); err != nil {
		t.Fatal(err)
	}
	gone("Restart(false)")

	load("Failover")
	if err := n.Failover(0, 0); err != nil {
		t.Fatal(err)
	}
	gone("Failover")
}
