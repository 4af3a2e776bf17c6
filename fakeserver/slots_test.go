package fakeserver

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// A sharded fake answers as a Redis Cluster's primaries: CLUSTER SLOTS
// names every shard, a key is served only by its slot's node (MOVED to
// it elsewhere), keys of several slots are CROSSSLOT, and CLUSTER SHARDS
// is unknown (as before Redis 7).
func TestShardedCluster(t *testing.T) {
	cl := startSharded(t, 3)
	c0 := dial(t, cl.Nodes[0].Addr())
	slots := c0.do("CLUSTER", "SLOTS")
	for k, n := range cl.Nodes {
		if !strings.Contains(slots, ":"+strconv.Itoa(k*clusterSlots/3)+"\r\n") || !strings.Contains(slots, n.clusterID()) {
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

// MoveSlot moves a slot's keys, with their TTLs, and its ownership at
// once: the old node answers MOVED to the new one, CLUSTER SLOTS splits
// the old range, and other slots stay.
func TestShardedMoveSlot(t *testing.T) {
	cl := startSharded(t, 3)
	c2 := dial(t, cl.Nodes[2].Addr())
	// "foo" and "{foo}x" share slot 12182 (the third shard's); "zap" does not
	for _, kv := range [][2]string{{"foo", "1"}, {"{foo}x", "2"}} {
		if got := c2.do("SET", kv[0], kv[1], "PX", "60000"); got != "+OK\r\n" {
			t.Fatalf("SET %s: %q", kv[0], got)
		}
	}
	n, err := MoveSlot(12182, cl.Nodes[0])
	if err != nil || n != 2 {
		t.Fatalf("MoveSlot: %d, %v", n, err)
	}
	if got := c2.do("GET", "foo"); got != "-MOVED 12182 "+cl.Nodes[0].Addr()+"\r\n" {
		t.Fatalf("GET on the old node: %q", got)
	}
	c0 := dial(t, cl.Nodes[0].Addr())
	if got := c0.do("GET", "{foo}x"); got != "$1\r\n2\r\n" {
		t.Fatalf("GET on the new node: %q", got)
	}
	if ttl := cl.Nodes[0].PTTL("foo"); ttl < 50*time.Second || ttl > 60*time.Second {
		t.Fatalf("PTTL after the move: %v", ttl)
	}
	slots := c0.do("CLUSTER", "SLOTS")
	for _, want := range []string{":12181\r\n", ":12182\r\n", ":12183\r\n"} {
		if !strings.Contains(slots, want) {
			t.Fatalf("CLUSTER SLOTS lacks %q: %q", want, slots)
		}
	}
	if got := c2.do("MULTI"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	if got := c2.do("SET", "foo", "3"); !strings.HasPrefix(got, "-MOVED") {
		t.Fatalf("SET queued on the old node: %q", got)
	}
	if got := c2.do("EXEC"); !strings.HasPrefix(got, "-EXECABORT") {
		t.Fatalf("EXEC: %q", got)
	}
}

// startSharded starts a sharded cluster of n nodes, closed at the end of
// the test.
func startSharded(t *testing.T, n int) *Cluster {
	t.Helper()
	cl, err := StartShardedCluster(n, Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}
