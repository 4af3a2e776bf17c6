package fakeserver

import (
	"strings"
	"testing"
)

// A cluster node says so, and answers the connection commands of cluster
// clients, as a cluster-enabled redis-server 7.0.15 does: SELECT of a
// database other than 0 is refused, HELLO's mode and INFO's redis_mode are
// "cluster", INFO has a Cluster section with cluster_enabled:1, and
// READONLY, READWRITE and ASKING answer +OK. A standalone node answers as
// a standalone redis-server.
func TestShardedConnectionCommands(t *testing.T) {
	cl := startSharded(t, 2)
	c := dial(t, cl.Nodes[0].Addr())
	eqReply(t, "select 1", c.do("SELECT", "1"), errReply("ERR SELECT is not allowed in cluster mode"))
	eqReply(t, "select 16", c.do("SELECT", "16"), errReply("ERR SELECT is not allowed in cluster mode"))
	eqReply(t, "select x", c.do("SELECT", "x"), errReply("ERR value is not an integer or out of range"))
	eqReply(t, "select 0", c.do("SELECT", "0"), okReply)
	if h := c.do("HELLO", "2"); !strings.Contains(h, "$4\r\nmode\r\n$7\r\ncluster\r\n") {
		t.Errorf("HELLO: %q", h)
	}
	if info := c.do("INFO"); !containsAll(info, "redis_mode:cluster\r\n", "\r\n# Cluster\r\ncluster_enabled:1\r\n") {
		t.Errorf("INFO: %q", info)
	}
	if info := c.do("INFO", "cluster"); !strings.HasSuffix(info, "# Cluster\r\ncluster_enabled:1\r\n\r\n") {
		t.Errorf("INFO cluster: %q", info)
	}
	for _, cmd := range []string{"READONLY", "READWRITE", "ASKING"} {
		eqReply(t, cmd, c.do(cmd), okReply)
	}

	s := dial(t, startNode(t, Config{}).Addr())
	eqReply(t, "standalone select 1", s.do("SELECT", "1"), okReply)
	if h := s.do("HELLO", "2"); !strings.Contains(h, "$4\r\nmode\r\n$10\r\nstandalone\r\n") {
		t.Errorf("standalone HELLO: %q", h)
	}
	if info := s.do("INFO"); !containsAll(info, "redis_mode:standalone\r\n", "\r\n# Cluster\r\ncluster_enabled:0\r\n") {
		t.Errorf("standalone INFO: %q", info)
	}
	for _, cmd := range []string{"READONLY", "READWRITE", "ASKING"} {
		eqReply(t, "standalone "+cmd, s.do(cmd), errReply("ERR This instance has cluster support disabled"))
	}
}
