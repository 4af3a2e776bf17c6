package fakeserver

import (
	"sort"
	"time"
)

// Conveniences for Go tests: a cluster tied to a test's lifetime, and
// seeding, inspecting and time travel from Go. They act on database 0 and
// see the node's clock (offset, drift, FastForward) like any command.

// TB is the part of testing.TB that RunT uses; *testing.T and *testing.B
// satisfy it. (fakeserver does not import testing, so programs that link it,
// such as redmux-bench, do not link the test framework.)
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// RunT starts n nodes for t (with cfg if given) and closes them with
// t.Cleanup; it fails t if they cannot start.
func RunT(t TB, n int, cfg ...Config) *Cluster {
	t.Helper()
	var c Config
	if len(cfg) > 0 {
		c = cfg[0]
	}
	cl, err := StartCluster(n, c)
	if err != nil {
		t.Fatalf("fakeserver.RunT: %v", err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

// Set stores a string value under key; ttl > 0 sets an expiry (on the
// node's clock), otherwise the key does not expire.
func (n *Node) Set(key, value string, ttl time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	e := entry{val: []byte(value)}
	if ttl > 0 {
		e.exp = n.nowLocked()/1e6 + max(int64(ttl/time.Millisecond), 1)
	}
	n.put(0, key, e)
}

// Del deletes key; it reports whether the key existed.
func (n *Node) Del(key string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.lookup(0, key, n.nowLocked()); !ok {
		return false
	}
	n.remove(0, key)
	return true
}

// Keys returns the unexpired keys, sorted.
func (n *Node) Keys() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	keys := n.liveKeys(0, nil, "")
	sort.Strings(keys)
	return keys
}

// TTL is PTTL under miniredis's name: the remaining time to live, -2ns
// for no key, -1ns for a key without expiry.
func (n *Node) TTL(key string) time.Duration { return n.PTTL(key) }

// FastForward moves the node's clock d forward (backward if negative),
// keeping any drift, the time it gained so far and its rate: keys whose
// time has come expire, exactly as when a real clock jumps. It is
// StepClock with the drift rate unchanged.
func (n *Node) FastForward(d time.Duration) {
	n.mu.Lock()
	n.stepClockLocked(d, n.drift)
	n.mu.Unlock()
}

// FastForward moves every node's clock d forward (see Node.FastForward).
func (c *Cluster) FastForward(d time.Duration) {
	for _, n := range c.Nodes {
		n.FastForward(d)
	}
}
