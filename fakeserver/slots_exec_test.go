package fakeserver

import (
	"strconv"
	"testing"
)

// EXEC on a cluster node checks its queued commands' keys as one request,
// under the node's lock, as Redis does: keys of several slots answer
// CROSSSLOT, a slot moved away since the commands were queued answers MOVED;
// either way the transaction is discarded and nothing runs.
func TestShardedExecChecksSlots(t *testing.T) {
	cl := startSharded(t, 3)
	n2 := cl.Nodes[2]
	c := dial(t, n2.Addr())
	// another key node 2 serves, in a slot other than foo's (12182)
	other := ""
	for i := 0; other == ""; i++ {
		k := "k" + strconv.Itoa(i)
		if s := keyHashSlot([]byte(k)); s != 12182 && s >= 2*clusterSlots/3 {
			other = k
		}
	}

	eqReply(t, "multi", c.do("MULTI"), okReply)
	eqReply(t, "queued foo", c.do("SET", "foo", "1"), "+QUEUED\r\n")
	eqReply(t, "queued other", c.do("SET", other, "1"), "+QUEUED\r\n")
	eqReply(t, "exec cross-slot", c.do("EXEC"), errReply("CROSSSLOT Keys in request don't hash to the same slot"))
	eqReply(t, "discarded", c.do("EXEC"), errReply("ERR EXEC without MULTI"))
	eqReply(t, "nothing ran", c.do("EXISTS", "foo", other), errReply("CROSSSLOT Keys in request don't hash to the same slot"))
	if _, ok := n2.Get("foo"); ok {
		t.Fatal("the cross-slot transaction ran")
	}

	eqReply(t, "set foo", c.do("SET", "foo", "old"), okReply)
	eqReply(t, "multi", c.do("MULTI"), okReply)
	eqReply(t, "queued", c.do("SET", "foo", "new"), "+QUEUED\r\n")
	if _, err := MoveSlot(12182, cl.Nodes[0]); err != nil {
		t.Fatal(err)
	}
	eqReply(t, "exec after the slot moved", c.do("EXEC"), errReply("MOVED 12182 "+cl.Nodes[0].Addr()))
	if v, _ := cl.Nodes[0].Get("foo"); string(v) != "old" {
		t.Errorf("foo on its new node = %q, want the value before the transaction", v)
	}
	if _, ok := n2.Get("foo"); ok {
		t.Error("the transaction wrote foo on a node that no longer serves it")
	}
	eqReply(t, "discarded", c.do("EXEC"), errReply("ERR EXEC without MULTI"))
}
