package fakeserver

import (
	"strings"
	"testing"
)

// A script on a cluster node may touch only keys of the slots the node
// serves, as in Redis 7.0.15 (replies checked on a cluster-enabled
// redis-server): a redis.call on another node's key, or on keys of
// several slots in one command, fails with "Script attempted to access a
// non local key in a cluster node"; keys of two slots both served here,
// in separate commands, are allowed (scripts without a shebang).
func TestShardedScriptNonLocalKey(t *testing.T) {
	cl := startSharded(t, 3)
	c := dial(t, cl.Nodes[0].Addr()) // "foo" (12182) is node 2's
	const msg = "ERR Script attempted to access a non local key in a cluster node"
	r := c.do("EVAL", "return redis.call('set', 'foo', '1')", "0")
	if !strings.HasPrefix(r, "-"+msg+" script: ") || !strings.HasSuffix(r, ", on @user_script:1.\r\n") {
		t.Errorf("set of another node's key: %q", r)
	}
	if _, ok := cl.Nodes[0].Get("foo"); ok {
		t.Error("the script wrote another node's key")
	}
	eqReply(t, "pcall", c.do("EVAL", "local ok, e = pcall(redis.call, 'get', 'foo') return e", "0"), bulk(msg))
	// two keys node 0 serves, in two different slots
	var mine []string
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "x", "y", "z"} {
		if s := keyHashSlot([]byte(k)); s < clusterSlots/3 && (len(mine) == 0 || keyHashSlot([]byte(mine[0])) != s) {
			mine = append(mine, k)
		}
	}
	if len(mine) < 2 {
		t.Fatalf("no two keys of node 0: %v", mine)
	}
	eqReply(t, "two local slots, two commands", c.do("EVAL", "redis.call('set', KEYS[1], '1') return redis.call('set', '"+mine[1]+"', '1')", "1", mine[0]), okReply)
	r = c.do("EVAL", "return redis.call('mget', '"+mine[0]+"', '"+mine[1]+"')", "0")
	if !strings.HasPrefix(r, "-"+msg+" script: ") {
		t.Errorf("mget of two slots: %q", r)
	}
}
