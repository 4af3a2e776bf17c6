package fakeserver

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// This file holds every fault a node injects, set from Go or by the FAKE
// admin command (admin.go parses it): reply latency (SetLatency, applied
// by conn.go when replies are written), request delay, per-direction
// partitions (requests dropped, or replies dropped after the command was
// executed), blackhole, throughput cap, clock offset, drift and steps,
// injected errors and malformed replies, and ClearFaults. Down, Up and
// Restart are the node's lifecycle (node.go). beforeExec and waitSlot
// apply the request-side faults.

// gate is a blackhole: requests wait until ch is closed (Heal).
type gate struct{ ch chan struct{} }

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
	storeDelay(&n.reqFixed, &n.reqJitter, fixed, jitter)
}

// storeDelay sets a fixed + jitter delay pair; negative values are 0.
func storeDelay(f, j *atomic.Int64, fixed, jitter time.Duration) {
	f.Store(int64(max(fixed, 0)))
	j.Store(int64(max(jitter, 0)))
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
func (n *Node) Partition(d Direction) { n.partition(d) }

// partition is Partition; it returns the generation of this call, for
// endPartition.
func (n *Node) partition(d Direction) uint64 {
	n.faultMu.Lock()
	defer n.faultMu.Unlock()
	n.partGen++
	n.setPartLocked(d)
	return n.partGen
}

// endPartition ends the partition set by the partition call of generation
// gen, if no later Partition call replaced it: a timer ends only its own
// fault.
func (n *Node) endPartition(gen uint64) {
	n.faultMu.Lock()
	defer n.faultMu.Unlock()
	if n.partGen == gen {
		n.setPartLocked(NoPartition)
	}
}

// setPartLocked sets the partition; ending one closes the connections that
// lost a request or a reply. Callers hold faultMu.
func (n *Node) setPartLocked(d Direction) {
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
	n.stepClockLocked(delta, driftRate)
	n.mu.Unlock()
}

// stepClockLocked is StepClock with n.mu held.
func (n *Node) stepClockLocked(delta time.Duration, driftRate float64) {
	m := int64(time.Since(n.base))
	off := n.clockOff
	if n.drift != 0 {
		off += int64(n.drift * float64(m-n.driftAt))
	}
	n.clockOff = off + int64(delta)
	n.drift = driftRate
	n.driftAt = m
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

// SetLatency adds fixed plus a uniform random [0,jitter) delay before each
// batch of replies, measured from when the request was read. Replies on one
// connection stay in order; other connections are not slowed.
func (n *Node) SetLatency(fixed, jitter time.Duration) {
	storeDelay(&n.latFixed, &n.latJitter, fixed, jitter)
}

func (n *Node) latency() (time.Duration, time.Duration) {
	return time.Duration(n.latFixed.Load()), time.Duration(n.latJitter.Load())
}

func randDuration(max time.Duration) time.Duration {
	return time.Duration(rand.Int64N(int64(max)))
}

// Blackhole makes the node a partition: it keeps accepting connections and
// reading requests but executes and answers nothing (FAKE admin commands
// excepted) until Heal.
func (n *Node) Blackhole() { n.blackhole() }

// blackhole is Blackhole; it returns the generation of this call, for
// endBlackhole. A call while a blackhole is on keeps its held requests and
// takes it over (a timer of the earlier call no longer ends it).
func (n *Node) blackhole() uint64 {
	n.faultMu.Lock()
	defer n.faultMu.Unlock()
	n.holeGen++
	if n.hole.Load() == nil {
		n.hole.Store(&gate{ch: make(chan struct{})})
	}
	return n.holeGen
}

// endBlackhole ends the blackhole set by the blackhole call of generation
// gen, if no later Blackhole call took it over; it leaves partitions alone.
func (n *Node) endBlackhole(gen uint64) {
	n.faultMu.Lock()
	defer n.faultMu.Unlock()
	if n.holeGen == gen {
		n.openHoleLocked()
	}
}

// openHoleLocked ends the blackhole, if any: its held requests run.
// Callers hold faultMu.
func (n *Node) openHoleLocked() {
	if g := n.hole.Load(); g != nil {
		n.hole.Store(nil)
		close(g.ch)
	}
}

// Heal ends a blackhole and a per-direction Partition. Requests held during it
// are then executed and answered in order, as TCP delivers them after a
// partition heals; this includes requests from clients that closed their socket
// meanwhile (the server sees the close only after the data). Requests on
// connections dropped by Down, Restart or Close are lost, never executed.
func (n *Node) Heal() {
	n.faultMu.Lock()
	defer n.faultMu.Unlock()
	n.openHoleLocked()
	n.setPartLocked(NoPartition)
}

// SetClock skews the node's clock, used for every expiry decision:
// node time = real time + offset + driftRate*(time elapsed since this call).
// Each call replaces the previous setting (the clock may jump).
// offset and driftRate must pass CheckClock; other values are a
// programming error and panic (the FAKE CLOCK command refuses them with an
// error reply).
func (n *Node) SetClock(offset time.Duration, driftRate float64) {
	if err := CheckClock(offset, driftRate); err != nil {
		panic(err)
	}
	n.mu.Lock()
	n.clockOff = int64(offset)
	n.drift = driftRate
	n.driftAt = int64(time.Since(n.base))
	n.mu.Unlock()
}

// CheckClock reports whether SetClock accepts offset and driftRate: an
// offset within 100 years either way, and a finite drift rate in (-1, 1000]
// (the clock never runs backwards).
func CheckClock(offset time.Duration, driftRate float64) error {
	if offset > maxAdminDur || offset < -maxAdminDur {
		return fmt.Errorf("fakeserver: clock offset %v out of range (at most 100 years either way)", offset)
	}
	if !validDrift(driftRate) {
		return fmt.Errorf("fakeserver: clock drift rate %v invalid (want a finite number > -1 and <= 1000)", driftRate)
	}
	return nil
}

// FailNext replaces the replies of the next k commands with "-"+errText;
// those commands are not executed. FAKE commands are never failed.
func (n *Node) FailNext(k int, errText string) {
	n.failText.Store(&errText)
	n.failN.Store(int64(k))
}

// MalformNext replaces the replies of the next k commands with bytes that
// start with an invalid RESP type byte ("?"); those commands are not
// executed. FAKE commands are never malformed.
func (n *Node) MalformNext(k int) { n.malformN.Store(int64(k)) }

// ClearFaults removes reply and request delays, blackhole and partitions,
// injected errors and malformed replies, a refused INFO, and resets the
// clock to real time. It does not bring a down node up (use Up).
func (n *Node) ClearFaults() {
	n.RefuseInfo(false)
	n.SetLatency(0, 0)
	n.SetRequestDelay(0, 0)
	n.SetThroughput(0)
	n.Heal()
	n.failN.Store(0)
	n.malformN.Store(0)
	n.SetClock(0, 0)
}

func takeOne(a *atomic.Int64) bool {
	for {
		v := a.Load()
		if v <= 0 {
			return false
		}
		if a.CompareAndSwap(v, v-1) {
			return true
		}
	}
}
