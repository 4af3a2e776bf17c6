package fakeserver

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/redcon"
)

// adminHelp is the reply of FAKE HELP (see docs/FAKESERVER.md).
var adminHelp = []string{
	"FAKE <subcommand> [<arg> ...]. Fault injection for the redmux fake Redis node:",
	"LATENCY <fixed> [<jitter>]",
	"    Delay every reply by fixed plus uniform [0,jitter). Durations: 10ms, 1.5s, or a number of milliseconds.",
	"DOWN [<duration>]",
	"    Refuse new connections and drop open ones (this one too); come back up after duration if given.",
	"BLACKHOLE [<duration>]",
	"    Accept and read but execute and answer nothing (FAKE excepted); heal after duration if given.",
	"HEAL",
	"    End a blackhole; held requests are then executed and answered in order.",
	"RESTART [LOSE|KEEP] [<delay>]",
	"    Drop all connections, optionally wipe data and scripts (LOSE), stay unreachable for delay, accept again.",
	"CLOCK <offset> [<driftrate>]",
	"    Node clock = real + offset + driftrate*elapsed; used for expiry. Offset may be negative (-2s).",
	"FAILNEXT <k> <error text ...>",
	"    Replace the next k replies with -<error text>; those commands are not executed.",
	"MALFORM <k>",
	"    Replace the next k replies with malformed bytes (invalid type byte '?'); not executed.",
	"CLEAR",
	"    Remove latency and delays, throughput cap, blackhole and partitions, injected errors, malformed replies and clock skew.",
	"HELP",
	"    Print this help.",
}

// maxAdminDur bounds every duration the admin command accepts (and clock
// offsets from Go): 100 years either way, far inside time.Duration's range
// and the node clock's int64 nanoseconds.
const maxAdminDur = 100 * 365 * 24 * time.Hour

// parseDur accepts a Go duration ("10ms", "-2s") or a plain integer number
// of milliseconds. inRange is false (with ok true) for a well-formed value
// beyond maxAdminDur either way; a millisecond count is checked before it
// is scaled, so it cannot wrap around.
func parseDur(b []byte) (d time.Duration, ok, inRange bool) {
	if v, isInt := parseInt(b); isInt {
		if v > int64(maxAdminDur/time.Millisecond) || v < -int64(maxAdminDur/time.Millisecond) {
			return 0, true, false
		}
		return time.Duration(v) * time.Millisecond, true, true
	}
	d, err := time.ParseDuration(string(b))
	if err != nil {
		return 0, false, false
	}
	return d, true, d <= maxAdminDur && d >= -maxAdminDur
}

// validDrift reports whether r is a usable clock drift rate: a finite
// number greater than -1 (the clock never runs backwards) and at most 1000.
func validDrift(r float64) bool {
	return !math.IsNaN(r) && r > -1 && r <= 1000
}

func cmdFake(n *Node, c cmdCtx) {
	sub := strings.ToUpper(string(c.args[1]))
	a := c.args[2:]
	bad := func(msg string) { c.err("ERR FAKE " + sub + ": " + msg) }
	durArg := func(i int, what string) (time.Duration, bool) {
		d, ok, inRange := parseDur(a[i])
		if !ok {
			bad("invalid " + what + " '" + trunc(a[i], 64) + "' (want e.g. 10ms, 2s or milliseconds)")
			return 0, false
		}
		if !inRange {
			bad(what + " '" + trunc(a[i], 64) + "' out of range (at most 100 years either way)")
			return 0, false
		}
		return d, true
	}
	// optDur parses "[<duration>]": none is 0.
	optDur := func() (time.Duration, bool) {
		switch len(a) {
		case 0:
			return 0, true
		case 1:
			return durArg(0, "duration")
		}
		bad("usage: FAKE " + sub + " [<duration>]")
		return 0, false
	}
	switch sub {
	case "HELP":
		c.rc.WriteArray(len(adminHelp) + len(adminTimingHelp))
		for _, l := range adminHelp {
			c.rc.WriteString(l)
		}
		for _, l := range adminTimingHelp {
			c.rc.WriteString(l)
		}
	case "LATENCY":
		if len(a) < 1 || len(a) > 2 {
			bad("usage: FAKE LATENCY <fixed> [<jitter>]")
			return
		}
		fixed, ok := durArg(0, "duration")
		if !ok {
			return
		}
		var jitter time.Duration
		if len(a) == 2 {
			if jitter, ok = durArg(1, "jitter"); !ok {
				return
			}
		}
		if fixed < 0 || jitter < 0 {
			bad("durations must not be negative")
			return
		}
		n.SetLatency(fixed, jitter)
		c.ok()
	case "DOWN":
		d, ok := optDur()
		if !ok {
			return
		}
		c.ok()
		n.afterReply(c, func() {
			n.Down()
			if d > 0 && n.sleep(d) {
				n.Up()
			}
		})
	case "BLACKHOLE":
		d, ok := optDur()
		if !ok {
			return
		}
		n.Blackhole()
		if d > 0 {
			n.goBG(func() {
				if n.sleep(d) {
					n.Heal()
				}
			})
		}
		c.ok()
	case "HEAL":
		if len(a) != 0 {
			bad("takes no arguments")
			return
		}
		n.Heal()
		c.ok()
	case "RESTART":
		if len(a) > 2 {
			bad("usage: FAKE RESTART [LOSE|KEEP] [<delay>]")
			return
		}
		lose := false
		var delay time.Duration
		for i, x := range a {
			switch {
			case eqFold(x, "lose"):
				lose = true
			case eqFold(x, "keep"):
				lose = false
			default:
				d, ok := durArg(i, "delay")
				if !ok {
					return
				}
				delay = d
			}
		}
		c.ok()
		n.afterReply(c, func() { _ = n.Restart(lose, delay) })
	case "CLOCK":
		if len(a) < 1 || len(a) > 2 {
			bad("usage: FAKE CLOCK <offset> [<driftrate>]")
			return
		}
		off, ok := durArg(0, "offset")
		if !ok {
			return
		}
		var drift float64
		if len(a) == 2 {
			var err error
			drift, err = strconv.ParseFloat(string(a[1]), 64)
			if err != nil || !validDrift(drift) {
				bad("invalid drift rate '" + trunc(a[1], 64) + "' (a float > -1, e.g. 0.01)")
				return
			}
		}
		n.SetClock(off, drift)
		c.ok()
	case "FAILNEXT":
		if len(a) < 2 {
			bad("usage: FAKE FAILNEXT <k> <error text ...>")
			return
		}
		k, ok := parseInt(a[0])
		if !ok || k < 0 {
			bad("invalid count '" + trunc(a[0], 64) + "'")
			return
		}
		parts := make([]string, len(a)-1)
		for i, x := range a[1:] {
			parts[i] = string(x)
		}
		n.FailNext(int(k), strings.Join(parts, " "))
		c.ok()
	case "MALFORM":
		if len(a) != 1 {
			bad("usage: FAKE MALFORM <k>")
			return
		}
		k, ok := parseInt(a[0])
		if !ok || k < 0 {
			bad("invalid count '" + trunc(a[0], 64) + "'")
			return
		}
		n.MalformNext(int(k))
		c.ok()
	case "CLEAR":
		if len(a) != 0 {
			bad("takes no arguments")
			return
		}
		n.ClearFaults()
		c.ok()
	default:
		if !n.fakeTiming(c, sub, a) {
			c.err("ERR unknown FAKE subcommand '" + trunc(c.args[1], 64) + "'. Try FAKE HELP.")
		}
	}
}

// afterReply flushes the replies written so far on this connection, then
// runs f in the background once they have left (f drops this connection).
func (n *Node) afterReply(c cmdCtx, f func()) {
	if w := redcon.BaseWriter(c.fc.out.Conn); w != nil {
		_ = w.Flush()
	}
	fc := c.fc
	n.goBG(func() {
		fc.waitDrained(2 * time.Second)
		f()
	})
}

// sleep waits d; false if the node was closed meanwhile.
func (n *Node) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-n.closeCh:
		return false
	}
}

// adminTimingHelp documents the timing FAKE subcommands (appended to
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

// fakeTiming runs the timing FAKE subcommands (DELAY, PARTITION,
// THROUGHPUT, CLOCKSTEP); false if sub is not one of them.
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

// maxFaultDuration bounds the durations of the timing admin subcommands.
const maxFaultDuration = 1000 * time.Hour
