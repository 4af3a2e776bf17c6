package fakeserver

import (
	"errors"
	"fmt"
	"net"
	"testing"
	"time"
)

// The reply delay (SetLatency/SetReplyDelay) runs the command at once and
// holds only its answer: the key is on the node long before the client
// hears OK.
func TestReplyDelayAppliesFirst(t *testing.T) {
	n := startNode(t, Config{})
	const d = 300 * time.Millisecond
	n.SetReplyDelay(d, 0)
	c := dial(t, n.Addr())
	start := time.Now()
	c.send("SET", "k", "v")
	waitFor(t, time.Second, func() bool { _, ok := n.Get("k"); return ok }, "the SET was not applied before its reply")
	if applied := time.Since(start); applied > d/2 {
		t.Fatalf("applied after %v, expected at once", applied)
	}
	if _, err := c.tryRead(d / 3); err == nil {
		t.Fatal("the reply came before the reply delay")
	}
	eqReply(t, "late OK", c.read(), okReply)
	if took := time.Since(start); took < d {
		t.Errorf("reply after %v, want >= %v", took, d)
	}
}

// The request delay holds the command itself: nothing is applied until
// the delay has passed, then the reply follows at once. Commands behind it
// on the same connection wait; other connections do not.
func TestRequestDelayAppliesLate(t *testing.T) {
	n := startNode(t, Config{})
	const d = 300 * time.Millisecond
	n.SetRequestDelay(d, 0)
	c, other := dial(t, n.Addr()), dial(t, n.Addr())
	start := time.Now()
	c.send("SET", "k", "v")
	time.Sleep(d / 3)
	if _, ok := n.Get("k"); ok {
		t.Fatal("the SET was applied before the request delay passed")
	}
	// FAKE commands are not delayed: an admin can still clear faults.
	eqReply(t, "admin", other.do("FAKE", "HELP")[:4], fmt.Sprintf("*%d\r", len(adminHelp())))
	// Answered while the delayed SET is still unapplied: it did not wait
	// behind the delay (an order, not a time).
	if _, ok := n.Get("k"); ok {
		t.Error("FAKE answered only after the delayed SET was applied")
	}
	eqReply(t, "OK", c.read(), okReply)
	if took := time.Since(start); took < d {
		t.Errorf("applied and answered after %v, want >= %v", took, d)
	}
	if _, ok := n.Get("k"); !ok {
		t.Fatal("the SET was lost")
	}
	n.SetRequestDelay(0, 0)
	start = time.Now()
	eqReply(t, "fast again", c.do("PING"), pongReply)
	// The bound is the fault's own value: a delay still applied would
	// take at least d.
	if took := time.Since(start); took >= d {
		t.Errorf("PING took %v after the delay was cleared", took)
	}
}

// Partition(Requests): commands are dropped unexecuted; Partition(Replies):
// they are executed and the answers lost. Ending the partition closes the
// connections that lost something; others (and FAKE) work throughout.
func TestPartitionDirections(t *testing.T) {
	for _, dir := range []Direction{Requests, Replies} {
		t.Run(dir.String(), func(t *testing.T) {
			n := startNode(t, Config{})
			idle := dial(t, n.Addr())
			eqReply(t, "idle ping", idle.do("PING"), pongReply)
			n.Partition(dir)
			if n.Partitioned() != dir {
				t.Fatalf("Partitioned() = %v", n.Partitioned())
			}
			c := dial(t, n.Addr())
			c.send("SET", "k", "v")
			if r, err := c.tryRead(150 * time.Millisecond); err == nil {
				t.Fatalf("got a reply %q through the partition", r)
			}
			_, applied := n.Get("k")
			if applied != (dir == Replies) {
				t.Fatalf("applied = %v with %v dropped", applied, dir)
			}
			admin := dial(t, n.Addr())
			eqReply(t, "admin during partition", admin.do("FAKE", "PARTITION", "NONE"), okReply)
			if n.Partitioned() != NoPartition {
				t.Fatal("FAKE PARTITION NONE did not end it")
			}
			r, err := c.tryRead(2 * time.Second)
			var ne net.Error
			if err == nil || (errors.As(err, &ne) && ne.Timeout()) {
				t.Fatalf("the connection that lost a %v survived the heal (read %q, %v)", dir, r, err)
			}
			eqReply(t, "untouched connection", idle.do("PING"), pongReply)
			eqReply(t, "admin connection", admin.do("PING"), pongReply)
			_, applied = n.Get("k")
			if applied != (dir == Replies) {
				t.Fatalf("after heal applied = %v", applied)
			}
		})
	}
}

// A connection that lost a request or a reply never answers again, even a
// request that comes after the partition ended and before the heal closed
// it: that answer would be taken for the lost one's (the client matches
// replies in order). The window is opened by ending the partition without
// the close.
func TestLossyConnectionNeverAnswersAgain(t *testing.T) {
	for _, dir := range []Direction{Requests, Replies} {
		t.Run(dir.String(), func(t *testing.T) {
			n := startNode(t, Config{})
			c := dial(t, n.Addr())
			n.Partition(dir)
			c.send("SET", "k", "v1")
			if r, err := c.tryRead(100 * time.Millisecond); err == nil {
				t.Fatalf("got a reply %q through the partition", r)
			}
			n.part.Store(int32(NoPartition)) // ended, not yet closed (the heal's window)
			c.send("SET", "k2", "v2")
			if r, err := c.tryRead(200 * time.Millisecond); err == nil {
				t.Fatalf("the lossy connection answered a later request: %q", r)
			}
			if _, ok := n.Get("k2"); ok {
				t.Fatal("the later request ran on the lossy connection")
			}
			fresh := dial(t, n.Addr())
			eqReply(t, "a fresh connection", fresh.do("PING"), pongReply)
		})
	}
}

func TestPartitionHealAndClear(t *testing.T) {
	n := startNode(t, Config{})
	n.Partition(Replies)
	n.Heal()
	if n.Partitioned() != NoPartition {
		t.Fatal("Heal did not end the partition")
	}
	n.Partition(Requests)
	n.SetRequestDelay(time.Second, 0)
	n.ClearFaults()
	if n.Partitioned() != NoPartition || n.reqFixed.Load() != 0 {
		t.Fatal("ClearFaults left a partition or a request delay")
	}
	c := dial(t, n.Addr())
	eqReply(t, "after clear", c.do("PING"), pongReply)
}

func TestStepClock(t *testing.T) {
	n := startNode(t, Config{})
	c := dial(t, n.Addr())
	eqReply(t, "set", c.do("SET", "k", "v", "PX", "1000"), okReply)
	n.StepClock(900*time.Millisecond, 0)
	if p := n.PTTL("k"); p > 110*time.Millisecond || p < 0 {
		t.Fatalf("PTTL after a 900ms step = %v", p)
	}
	if s := n.ClockSkew(); s < 900*time.Millisecond || s > 950*time.Millisecond {
		t.Fatalf("skew = %v", s)
	}
	// A new rate keeps the time gained so far: the clock does not jump.
	n.StepClock(0, -0.5)
	if s := n.ClockSkew(); s < 890*time.Millisecond || s > 950*time.Millisecond {
		t.Fatalf("skew after setting a rate = %v", s)
	}
	time.Sleep(100 * time.Millisecond)
	if s := n.ClockSkew(); s > 880*time.Millisecond {
		t.Fatalf("skew after 100ms at rate -0.5 = %v, want about 850ms", s)
	}
	n.StepClock(-2*time.Second, 0)
	if s := n.ClockSkew(); s > -1*time.Second {
		t.Fatalf("skew after a -2s step = %v", s)
	}
}

func TestAdminTimingFaults(t *testing.T) {
	n := startNode(t, Config{})
	c := dial(t, n.Addr())
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"FAKE", "DELAY"}, "-ERR FAKE DELAY: usage: FAKE DELAY REQUEST|REPLY <fixed> [<jitter>]\r\n"},
		{[]string{"FAKE", "DELAY", "SIDEWAYS", "1ms"}, "-ERR FAKE DELAY: direction must be REQUEST or REPLY, not 'SIDEWAYS'\r\n"},
		{[]string{"FAKE", "DELAY", "REQUEST", "-1ms"}, "-ERR FAKE DELAY: invalid delay '-1ms' (want e.g. 10ms, 2s or milliseconds; at most 1000h)\r\n"},
		{[]string{"FAKE", "DELAY", "REPLY", "1ms", "x"}, "-ERR FAKE DELAY: invalid jitter 'x' (want e.g. 10ms, 2s or milliseconds; at most 1000h)\r\n"},
		{[]string{"FAKE", "PARTITION"}, "-ERR FAKE PARTITION: usage: FAKE PARTITION REQUESTS|REPLIES|NONE [<duration>]\r\n"},
		{[]string{"FAKE", "PARTITION", "UP"}, "-ERR FAKE PARTITION: direction must be REQUESTS, REPLIES or NONE, not 'UP'\r\n"},
		{[]string{"FAKE", "PARTITION", "REPLIES", "99999999h"}, "-ERR FAKE PARTITION: invalid duration '99999999h' (want e.g. 10ms, 2s or milliseconds; at most 1000h)\r\n"},
		{[]string{"FAKE", "CLOCKSTEP"}, "-ERR FAKE CLOCKSTEP: usage: FAKE CLOCKSTEP <delta> [<driftrate>]\r\n"},
		{[]string{"FAKE", "CLOCKSTEP", "1ms", "NaN"}, "-ERR FAKE CLOCKSTEP: invalid drift rate 'NaN' (a float > -1, e.g. 0.01)\r\n"},
		{[]string{"FAKE", "CLOCKSTEP", "1ms", "-1"}, "-ERR FAKE CLOCKSTEP: invalid drift rate '-1' (a float > -1, e.g. 0.01)\r\n"},
	} {
		eqReply(t, fmt.Sprint(tc.args), c.do(tc.args...), tc.want)
	}
	eqReply(t, "delay request", c.do("FAKE", "DELAY", "REQUEST", "40ms", "1ms"), okReply)
	if f, j := n.reqFixed.Load(), n.reqJitter.Load(); time.Duration(f) != 40*time.Millisecond || time.Duration(j) != time.Millisecond {
		t.Errorf("request delay = %v %v", time.Duration(f), time.Duration(j))
	}
	start := time.Now()
	eqReply(t, "slow ping", c.do("PING"), pongReply)
	if d := time.Since(start); d < 40*time.Millisecond {
		t.Errorf("ping took %v under a 40ms request delay", d)
	}
	eqReply(t, "delay reply", c.do("FAKE", "DELAY", "REPLY", "30"), okReply)
	if f, _ := n.latency(); f != 30*time.Millisecond {
		t.Errorf("reply delay = %v", f)
	}
	eqReply(t, "clear", c.do("FAKE", "CLEAR"), okReply)

	eqReply(t, "clockstep", c.do("FAKE", "CLOCKSTEP", "-1500ms", "0.001"), okReply)
	if s := n.ClockSkew(); s > -1400*time.Millisecond {
		t.Errorf("skew = %v", s)
	}

	// A partition with a duration ends by itself.
	eqReply(t, "partition", c.do("FAKE", "PARTITION", "REPLIES", "150ms"), okReply)
	if n.Partitioned() != Replies {
		t.Fatal("not partitioned")
	}
	waitFor(t, 3*time.Second, func() bool { return n.Partitioned() == NoPartition }, "the partition did not end by itself")
	eqReply(t, "after", c.do("PING"), pongReply)
}

// waitFor polls cond every 2ms for up to d.
func waitFor(t *testing.T, d time.Duration, cond func() bool, msg string) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); {
		if time.Now().After(deadline) {
			t.Fatal(msg)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// A throughput cap spaces commands one service slot apart over all
// connections: 20 commands from 4 connections at 100 commands/s cannot all
// be answered in less than 19 slots (190ms), however fast the machine. The
// bound is a lower one, so a slow machine cannot make it fail; without the
// cap the code path never waits (a cap of 0 is checked through the API).
func TestThroughputCapSpacesCommands(t *testing.T) {
	n := startNode(t, Config{})
	admin := dial(t, n.Addr())
	eqReply(t, "cap", admin.do("FAKE", "THROUGHPUT", "100"), okReply)
	if r := n.Throughput(); r < 99.9 || r > 100.1 {
		t.Fatalf("Throughput() = %v, want 100", r)
	}
	conns := make([]*tconn, 4)
	for i := range conns {
		conns[i] = dial(t, n.Addr())
	}
	start := time.Now()
	for _, c := range conns {
		for k := 0; k < 5; k++ {
			c.send("PING")
		}
	}
	// FAKE commands are never capped: an admin can lift the cap.
	eqReply(t, "admin under cap", admin.do("FAKE", "HELP")[:4], fmt.Sprintf("*%d\r", len(adminHelp())))
	for _, c := range conns {
		for k := 0; k < 5; k++ {
			eqReply(t, "ping", c.read(), pongReply)
		}
	}
	if took := time.Since(start); took < 190*time.Millisecond {
		t.Fatalf("20 commands at 100/s answered in %v, want >= 190ms", took)
	}
	eqReply(t, "clear", admin.do("FAKE", "CLEAR"), okReply)
	if r := n.Throughput(); r != 0 {
		t.Fatalf("FAKE CLEAR left a cap of %v/s", r)
	}
	n.SetThroughput(50)
	n.SetThroughput(0)
	if r := n.Throughput(); r != 0 || n.capEvery.Load() != 0 {
		t.Fatalf("SetThroughput(0) left a cap of %v/s", r)
	}
	for _, tc := range []struct{ arg, want string }{
		{"-1", "-ERR FAKE THROUGHPUT: invalid rate '-1' (commands per second, 0..1e9; 0 = no cap)\r\n"},
		{"NaN", "-ERR FAKE THROUGHPUT: invalid rate 'NaN' (commands per second, 0..1e9; 0 = no cap)\r\n"},
		{"fast", "-ERR FAKE THROUGHPUT: invalid rate 'fast' (commands per second, 0..1e9; 0 = no cap)\r\n"},
	} {
		eqReply(t, tc.arg, admin.do("FAKE", "THROUGHPUT", tc.arg), tc.want)
	}
	eqReply(t, "usage", admin.do("FAKE", "THROUGHPUT"), "-ERR FAKE THROUGHPUT: usage: FAKE THROUGHPUT <commands/s>\r\n")
}
