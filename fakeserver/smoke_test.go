package fakeserver

import "testing"

func TestSmoke(t *testing.T) {
	n := startNode(t, Config{})
	c := dial(t, n.Addr())
	eqReply(t, "ping", c.do("PING"), pongReply)
	eqReply(t, "set", c.do("SET", "k", "v", "NX", "PX", "1000"), okReply)
	eqReply(t, "get", c.do("GET", "k"), bulk("v"))
}
