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
		if len(a) > 2 {
			bad("usage: FAKE RESTART [LOSE|KEEP] [<delay>]")
			return
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
			bad("usage: FAKE FAILNEXT <k> <error text>")
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
		if !n.fakeTiming(c, sub, a) { // faults.go
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
