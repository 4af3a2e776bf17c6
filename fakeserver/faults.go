package fakeserver

import (
	"math"
	"strconv"
	"time"
)

// This file holds the faults where time and direction matter: a delay
// before a request is executed (request delay), per-direction partitions
// (requests dropped, or replies dropped after the command was executed),
// and clock steps. The reply delay after execution is SetLatency (conn.go
// applies it when replies are written).

// Direction names one side of a connection for Partition.
type Direction int32

const (
	// NoPartition ends a per-direction partition (see Partition).
	NoPartition Direction = iota
	// Requests drops requests: they are read and discarded, never
	// executed, never answered.
	Requests
	// Replies drops replies: commands are executed, their replies
	// discarded.
	Replies
)

func (d Direction) String() string {
	switch d {
	case Requests:
		return "requests"
	case Replies:
		return "replies"
	}
	return "none"
}

// SetRequestDelay delays the execution of every command (FAKE excepted)
// until fixed plus a uniform random [0,jitter) after its request bytes
// were read: the request is slow, the command runs late, and its reply is
// sent at once after it ran (plus any SetLatency). Commands on one
// connection run in order, so a delayed command holds up those behind it
// on the same connection; other connections are not slowed.
func (n *Node) SetRequestDelay(fixed, jitter time.Duration) {
	if fixed < 0 {
		fixed = 0
	}
	if jitter < 0 {
		jitter = 0
	}
	n.reqFixed.Store(int64(fixed))
	n.reqJitter.Store(int64(jitter))
}

// SetReplyDelay is SetLatency: the command is executed as soon as it is
// read, and its reply leaves fixed plus U[0,jitter) after the request was
// read (request fast, answer slow).
func (n *Node) SetReplyDelay(fixed, jitter time.Duration) { n.SetLatency(fixed, jitter) }

// Partition cuts one direction of every connection (FAKE commands
// excepted, so an admin connection can end it): with Requests, commands
// are read and dropped unexecuted; with Replies, commands are executed and
// their replies dropped. Connections stay open and silent. Partition
// (NoPartition) or Heal ends it; every connection that lost a request or a
// reply meanwhile is then closed, as a TCP connection whose bytes never
// arrived would be reset (a byte stream cannot skip a reply, so the
// client's reply matching stays true). Only one direction is cut at a
// time; a second call replaces the first.
func (n *Node) Partition(d Direction) {
	n.faultMu.Lock()
	defer n.faultMu.Unlock()
	old := Direction(n.part.Swap(int32(d)))
	if d == NoPartition && old != NoPartition {
		n.closeLost()
	}
}

// Partitioned returns the direction cut by Partition, NoPartition if none.
func (n *Node) Partitioned() Direction { return Direction(n.part.Load()) }

// closeLost closes every connection that lost a request or a reply to a
// partition.
func (n *Node) closeLost() {
	n.connMu.Lock()
	var lost []*fconn
	for fc := range n.conns {
		if fc.lost.Load() {
			lost = append(lost, fc)
		}
	}
	n.connMu.Unlock()
	for _, fc := range lost {
		_ = fc.closeNow()
	}
}

// StepClock moves the node's clock by delta from its current reading (a
// step: negative steps move it back) and sets its drift rate from now on,
// keeping the time it has gained so far. SetClock instead sets the offset
// from real time.
func (n *Node) StepClock(delta time.Duration, driftRate float64) {
	n.mu.Lock()
	m := int64(time.Since(n.base))
	off := n.clockOff
	if n.drift != 0 {
		off += int64(n.drift * float64(m-n.driftAt))
	}
	n.clockOff = off + int64(delta)
	n.drift = driftRate
	n.driftAt = m
	n.mu.Unlock()
}

// ClockSkew returns the node clock minus real time now.
func (n *Node) ClockSkew() time.Duration {
	n.mu.Lock()
	defer n.mu.Unlock()
	m := int64(time.Since(n.base))
	off := n.clockOff
	if n.drift != 0 {
		off += int64(n.drift * float64(m-n.driftAt))
	}
	return time.Duration(off)
}

// SetThroughput caps the node at perSec commands per second (FAKE
// excepted), as a single-threaded server whose every command costs
// 1/perSec of its time: commands run one service slot apart, in arrival
// order over all connections, and wait for their slot. Below the cap a
// command waits for nothing (its slot is already due); above it the queue,
// and with it every command's latency, grows for as long as the overload
// lasts. That is the knee a capacity sweep looks for. perSec <= 0 removes
// the cap. A command whose connection closes while it waits gives its
// slot back only when no later command has reserved one.
func (n *Node) SetThroughput(perSec float64) {
	var every int64
	if perSec > 0 && !math.IsInf(perSec, 1) {
		every = max(int64(float64(time.Second)/perSec), 1)
	}
	n.capMu.Lock()
	n.capEvery.Store(every)
	n.capNext = 0
	n.capMu.Unlock()
}

// Throughput returns the cap set by SetThroughput in commands per second
// (0: none).
func (n *Node) Throughput() float64 {
	if e := n.capEvery.Load(); e > 0 {
		return float64(time.Second) / float64(e)
	}
	return 0
}

// waitSlot waits for the command's service slot under a throughput cap;
// false if the connection closed meanwhile.
func (n *Node) waitSlot(fc *fconn) bool {
	every := n.capEvery.Load()
	if every <= 0 {
		return true
	}
	n.capMu.Lock()
	now := time.Now().UnixNano()
	slot := max(now, n.capNext)
	n.capNext = slot + every
	n.capMu.Unlock()
	if slot <= now {
		return true
	}
	t := time.NewTimer(time.Duration(slot - now))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-fc.done:
		n.capMu.Lock()
		if n.capNext == slot+every {
			n.capNext = slot
		}
		n.capMu.Unlock()
		return false
	}
}

// beforeExec applies the request-side faults to one non-FAKE command on
// the connection's goroutine: it waits out the request delay and the
// throughput cap's slot, and reports false if the command is dropped
// (requests partitioned, or the connection closed while it waited). With
// replies partitioned it makes the command's reply vanish.
func (n *Node) beforeExec(fc *fconn) bool {
	if fixed, jitter := n.reqFixed.Load(), n.reqJitter.Load(); fixed > 0 || jitter > 0 {
		d := time.Duration(fixed)
		if jitter > 0 {
			d += randDuration(time.Duration(jitter))
		}
		if wait := time.Until(time.Unix(0, fc.lastRead.Load()).Add(d)); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-fc.done:
				t.Stop()
				return false
			}
		}
	}
	if fc.lost.Load() {
		// This connection already lost a request or a reply: like a byte
		// stream with a hole, nothing after the hole may reach the client
		// (it would be taken for the answer to an earlier request). Its
		// requests are dropped until the partition's end closes it; a heal
		// racing with this request must not let it through.
		return false
	}
	if !n.waitSlot(fc) {
		return false
	}
	switch Direction(n.part.Load()) {
	case Requests:
		fc.lost.Store(true)
		return false
	case Replies:
		fc.lost.Store(true)
		fc.out.drop = true
	}
	return true
}

// adminTimingHelp documents the FAKE subcommands of this file (appended to
// FAKE HELP).
var adminTimingHelp = []string{
	"DELAY REQUEST|REPLY <fixed> [<jitter>]",
	"    REQUEST: run each command fixed plus uniform [0,jitter) after it was read (its reply follows at once).",
	"    REPLY: run each command at once, send its reply after the delay (the same as LATENCY).",
	"PARTITION REQUESTS|REPLIES|NONE [<duration>]",
	"    Drop requests (never executed) or replies (executed, answer lost); FAKE excepted. NONE or HEAL ends it",
	"    and closes every connection that lost a request or reply. Ends by itself after duration if given.",
	"THROUGHPUT <commands/s>",
	"    Cap the node at this many commands per second (0: no cap), as a single-threaded server with a fixed cost per",
	"    command: commands wait for their slot in arrival order, so latency grows without bound above the cap.",
	"CLOCKSTEP <delta> [<driftrate>]",
	"    Move the node clock by delta from its current reading (negative: back) and set its drift rate from now.",
}

// fakeTiming runs the FAKE subcommands of this file; false if sub is not
// one of them.
func (n *Node) fakeTiming(c cmdCtx, sub string, a [][]byte) bool {
	bad := func(msg string) { c.err("ERR FAKE " + sub + ": " + msg) }
	dur := func(b []byte, what string, neg bool) (time.Duration, bool) {
		d, ok, inRange := parseDur(b)
		if !ok || !inRange || (!neg && d < 0) || d > maxFaultDuration || d < -maxFaultDuration {
			bad("invalid " + what + " '" + trunc(b, 64) + "' (want e.g. 10ms, 2s or milliseconds; at most 1000h)")
			return 0, false
		}
		return d, true
	}
	switch sub {
	case "DELAY":
		if len(a) < 2 || len(a) > 3 {
			bad("usage: FAKE DELAY REQUEST|REPLY <fixed> [<jitter>]")
			return true
		}
		fixed, ok := dur(a[1], "delay", false)
		if !ok {
			return true
		}
		var jitter time.Duration
		if len(a) == 3 {
			if jitter, ok = dur(a[2], "jitter", false); !ok {
				return true
			}
		}
		switch {
		case eqFold(a[0], "request"):
			n.SetRequestDelay(fixed, jitter)
		case eqFold(a[0], "reply"):
			n.SetReplyDelay(fixed, jitter)
		default:
			bad("direction must be REQUEST or REPLY, not '" + trunc(a[0], 64) + "'")
			return true
		}
		c.ok()
	case "PARTITION":
		if len(a) < 1 || len(a) > 2 {
			bad("usage: FAKE PARTITION REQUESTS|REPLIES|NONE [<duration>]")
			return true
		}
		var d Direction
		switch {
		case eqFold(a[0], "requests"):
			d = Requests
		case eqFold(a[0], "replies"):
			d = Replies
		case eqFold(a[0], "none"):
			d = NoPartition
		default:
			bad("direction must be REQUESTS, REPLIES or NONE, not '" + trunc(a[0], 64) + "'")
			return true
		}
		var after time.Duration
		if len(a) == 2 {
			var ok bool
			if after, ok = dur(a[1], "duration", false); !ok {
				return true
			}
		}
		n.Partition(d)
		if after > 0 && d != NoPartition {
			n.goBG(func() {
				if n.sleep(after) && n.Partitioned() == d {
					n.Partition(NoPartition)
				}
			})
		}
		c.ok()
	case "THROUGHPUT":
		if len(a) != 1 {
			bad("usage: FAKE THROUGHPUT <commands/s>")
			return true
		}
		r, err := strconv.ParseFloat(string(a[0]), 64)
		if err != nil || math.IsNaN(r) || math.IsInf(r, 0) || r < 0 || r > 1e9 {
			bad("invalid rate '" + trunc(a[0], 64) + "' (commands per second, 0..1e9; 0 = no cap)")
			return true
		}
		n.SetThroughput(r)
		c.ok()
	case "CLOCKSTEP":
		if len(a) < 1 || len(a) > 2 {
			bad("usage: FAKE CLOCKSTEP <delta> [<driftrate>]")
			return true
		}
		delta, ok := dur(a[0], "delta", true)
		if !ok {
			return true
		}
		var rate float64
		if len(a) == 2 {
			var err error
			rate, err = strconv.ParseFloat(string(a[1]), 64)
			if err != nil || math.IsNaN(rate) || rate <= -1 || rate > 1000 {
				bad("invalid drift rate '" + trunc(a[1], 64) + "' (a float > -1, e.g. 0.01)")
				return true
			}
		}
		n.StepClock(delta, rate)
		c.ok()
	default:
		return false
	}
	return true
}

// maxFaultDuration bounds the durations of this file's admin subcommands.
const maxFaultDuration = 1000 * time.Hour
