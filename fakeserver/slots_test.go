package fakeserver

import (
	"strconv"
	"strings"
	"testing"
)

// A sharded fake answers as a Redis Cluster's primaries: CLUSTER SLOTS
// names every shard, a key is served only by its slot's node (MOVED to
// it elsewhere), keys of several slots are CROSSSLOT, and CLUSTER SHARDS
// is unknown (as before Redis 7).
func TestShardedCluster(t *testing.T) {
	cl, err := StartShardedCluster(3, Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	c0 := dial(t, cl.Nodes[0].Addr())
	slots := c0.do("CLUSTER", "SLOTS")
	for _, n := range cl.Nodes {
		if !strings.Contains(slots, ":"+strconv.Itoa(n.shard.Load().lo)+"\r\n") || !strings.Contains(slots, n.clusterID()) {
			t.Fatalf("CLUSTER SLOTS lacks %s: %q", n.Addr(), slots)
		}
	}
	if got := c0.do("CLUSTER", "KEYSLOT", "123456789"); got != ":12739\r\n" {
		t.Fatalf("KEYSLOT %q", got)
	}
	if got := c0.do("CLUSTER", "KEYSLOT", "{user1000}.following"); got != c0.do("CLUSTER", "KEYSLOT", "user1000") {
		t.Fatalf("hash tag: %q", got)
	}
	if got := c0.do("CLUSTER", "SHARDS"); !strings.HasPrefix(got, "-ERR unknown subcommand") {
		t.Fatalf("SHARDS %q", got)
	}
	// "foo" is slot 12182: the third shard's
	if got := c0.do("SET", "foo", "1"); got != "-MOVED 12182 "+cl.Nodes[2].Addr()+"\r\n" {
		t.Fatalf("SET on the wrong shard: %q", got)
	}
	if got := c0.do("EVAL", "return 1", "1", "foo"); !strings.HasPrefix(got, "-MOVED 12182 ") {
		t.Fatalf("EVAL on the wrong shard: %q", got)
	}
	c2 := dial(t, cl.Nodes[2].Addr())
	if got := c2.do("SET", "foo", "1"); got != "+OK\r\n" {
		t.Fatalf("SET on its shard: %q", got)
	}
	if got := c2.do("DEL", "foo", "bar"); !strings.HasPrefix(got, "-CROSSSLOT") {
		t.Fatalf("DEL of two slots: %q", got)
	}
	if got := c2.do("EVAL", "return 1", "0"); got != ":1\r\n" {
		t.Fatalf("EVAL without keys: %q", got)
	}
	solo := startNode(t, Config{})
	if got := dial(t, solo.Addr()).do("CLUSTER", "SLOTS"); !strings.Contains(got, "cluster support disabled") {
		t.Fatalf("standalone CLUSTER SLOTS: %q", got)
	}
}

func TestRole(t *testing.T) {
	n := startNode(t, Config{})
	if got := dial(t, n.Addr()).do("ROLE"); got != "*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n" {
		t.Fatalf("ROLE %q", got)
	}
}
