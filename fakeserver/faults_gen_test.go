package fakeserver

import (
	"testing"
	"time"
)

// Fault timers end only the fault they started: a later fault of the same
// kind, or of another kind, outlives them. Each test waits for the timer
// to have run (timerRuns) and then looks at the node's state, so nothing
// depends on the machine's speed.

// waitTimers waits until k fault timers have run out.
func waitTimers(t *testing.T, n *Node, k int64) {
	t.Helper()
	waitFor(t, 10*time.Second, func() bool { return n.timerRuns.Load() >= k }, "the fault timer never ran")
}

func TestBlackholeTimerSparesLaterBlackhole(t *testing.T) {
	n := startNode(t, Config{})
	adm := dial(t, n.Addr())
	eqReply(t, "timed", adm.do("FAKE", "BLACKHOLE", "100ms"), okReply)
	eqReply(t, "heal", adm.do("FAKE", "HEAL"), okReply)
	eqReply(t, "lasting", adm.do("FAKE", "BLACKHOLE"), okReply)
	waitTimers(t, n, 1)
	if n.hole.Load() == nil {
		t.Fatal("the first blackhole's timer ended the later blackhole meant to last")
	}
	c := dial(t, n.Addr())
	c.send("PING")
	eqReply(t, "heal", adm.do("FAKE", "HEAL"), okReply)
	eqReply(t, "held ping", c.read(), pongReply)
}

func TestBlackholeTimerSparesPartition(t *testing.T) {
	n := startNode(t, Config{})
	adm := dial(t, n.Addr())
	eqReply(t, "timed", adm.do("FAKE", "BLACKHOLE", "100ms"), okReply)
	eqReply(t, "partition", adm.do("FAKE", "PARTITION", "REQUESTS"), okReply)
	waitTimers(t, n, 1)
	if n.hole.Load() != nil {
		t.Error("the blackhole did not end after its duration")
	}
	if d := n.Partitioned(); d != Requests {
		t.Errorf("the blackhole's timer ended the partition: %v", d)
	}
}

func TestPartitionTimerSparesLaterPartition(t *testing.T) {
	n := startNode(t, Config{})
	adm := dial(t, n.Addr())
	eqReply(t, "timed", adm.do("FAKE", "PARTITION", "REPLIES", "100ms"), okReply)
	eqReply(t, "none", adm.do("FAKE", "PARTITION", "NONE"), okReply)
	eqReply(t, "lasting", adm.do("FAKE", "PARTITION", "REPLIES"), okReply)
	waitTimers(t, n, 1)
	if d := n.Partitioned(); d != Replies {
		t.Errorf("the first partition's timer ended the later one: %v", d)
	}
}

func TestDownTimerSparesLaterDown(t *testing.T) {
	n := startNode(t, Config{})
	adm := dial(t, n.Addr())
	eqReply(t, "down", adm.do("FAKE", "DOWN", "200ms"), okReply)
	waitFor(t, 10*time.Second, n.IsDown, "FAKE DOWN did not take the node down")
	n.Up()
	n.Down() // meant to last
	waitTimers(t, n, 1)
	if !n.IsDown() {
		t.Error("the first down's timer brought up a node taken down again after it")
	}
}

func TestRestartDelaySparesLaterDown(t *testing.T) {
	n := startNode(t, Config{})
	done := make(chan error, 1)
	go func() { done <- n.Restart(false, time.Second) }()
	waitFor(t, 10*time.Second, n.IsDown, "Restart did not take the node down")
	n.Down() // during the restart's delay: meant to last
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Restart: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Restart did not return")
	}
	if !n.IsDown() {
		t.Error("the restart's end brought up a node taken down during its delay")
	}
	n.Up()
	eqReply(t, "up again", dial(t, n.Addr()).do("PING"), pongReply)
}
