package fakeserver

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/redcon"
)

// This file is the FAKE admin command: one table of subcommands (name,
// argument count, usage, help, handler) from which dispatch, the usage
// errors and FAKE HELP are all derived. The faults it sets are in
// faults.go. See docs/FAKESERVER.md.

// fakeSub is one FAKE subcommand.
type fakeSub struct {
	name string   // upper case, as in FAKE HELP
	args string   // the arguments' usage: "<fixed> [<jitter>]"
	min  int      // fewest arguments after the subcommand name
	max  int      // most arguments; -1: no limit
	help []string // FAKE HELP's lines under the usage line
	// run executes the subcommand; its argument count is already checked.
	run func(x adminCtx)
}

// adminHelpHeader is the first line of FAKE HELP.
const adminHelpHeader = "FAKE <subcommand> [<arg> ...]. Fault injection for the redmux fake Redis node:"

// fakeSubs is every FAKE subcommand, in FAKE HELP's order.
var fakeSubs []fakeSub

func init() {
	fakeSubs = []fakeSub{
		{name: "LATENCY", args: "<fixed> [<jitter>]", min: 1, max: 2, run: fakeLatency,
			help: []string{"Delay every reply by fixed plus uniform [0,jitter). Durations: 10ms, 1.5s, or a number of milliseconds."}},
		{name: "DOWN", args: "[<duration>]", min: 0, max: 1, run: fakeDown,
			help: []string{"Refuse new connections and drop open ones (this one too); come back up after duration if given."}},
		{name: "BLACKHOLE", args: "[<duration>]", min: 0, max: 1, run: fakeBlackhole,
			help: []string{"Accept and read but execute and answer nothing (FAKE excepted); heal after duration if given."}},
		{name: "HEAL", min: 0, max: 0, run: func(x adminCtx) { x.n.Heal(); x.ok() },
			help: []string{"End a blackhole; held requests are then executed and answered in order."}},
		{name: "RESTART", args: "[LOSE|KEEP] [<delay>]", min: 0, max: 2, run: fakeRestart,
			help: []string{"Drop all connections and the script cache, optionally wipe data (LOSE), stay unreachable for delay, accept again."}},
		{name: "CLOCK", args: "<offset> [<driftrate>]", min: 1, max: 2, run: fakeClock,
			help: []string{"Node clock = real + offset + driftrate*elapsed; used for expiry. Offset may be negative (-2s)."}},
		{name: "FAILNEXT", args: "<k> <error text ...>", min: 2, max: -1, run: fakeFailNext,
			help: []string{"Replace the next k replies with -<error text>; those commands are not executed."}},
		{name: "MALFORM", args: "<k>", min: 1, max: 1, run: fakeMalform,
			help: []string{"Replace the next k replies with malformed bytes (invalid type byte '?'); not executed."}},
		{name: "CLEAR", min: 0, max: 0, run: func(x adminCtx) { x.n.ClearFaults(); x.ok() },
			help: []string{"Remove latency and delays, throughput cap, blackhole and partitions, injected errors, malformed replies, a refused INFO and clock skew."}},
		{name: "HELP", min: 0, max: -1, run: fakeHelp,
			help: []string{"Print this help."}},
		{name: "DELAY", args: "REQUEST|REPLY <fixed> [<jitter>]", min: 2, max: 3, run: fakeDelay,
			help: []string{
				"REQUEST: run each command fixed plus uniform [0,jitter) after it was read (its reply follows at once).",
				"REPLY: run each command at once, send its reply after the delay (the same as LATENCY).",
			}},
		{name: "PARTITION", args: "REQUESTS|REPLIES|NONE [<duration>]", min: 1, max: 2, run: fakePartition,
			help: []string{
				"Drop requests (never executed) or replies (executed, answer lost); FAKE excepted. NONE or HEAL ends it",
				"and closes every connection that lost a request or reply. Ends by itself after duration if given.",
			}},
		{name: "THROUGHPUT", args: "<commands/s>", min: 1, max: 1, run: fakeThroughput,
			help: []string{
				"Cap the node at this many commands per second (0: no cap), as a single-threaded server with a fixed cost per",
				"command: commands wait for their slot in arrival order, so latency grows without bound above the cap.",
			}},
		{name: "REFUSE-INFO", args: "ON|OFF", min: 1, max: 1, run: fakeRefuseInfo,
			help: []string{"ON: answer INFO with NOPERM (as for a user whose ACL forbids it), until OFF or CLEAR."}},
		{name: "RESYNC", min: 0, max: 0, run: func(x adminCtx) { x.n.Resync(nil); x.ok() },
			help: []string{"Replace the data set with an empty one, connections kept: a full resync from an empty server, then REPLICAOF NO ONE."}},
		{name: "CLOCKSTEP", args: "<delta> [<driftrate>]", min: 1, max: 2, run: fakeClockStep,
			help: []string{"Move the node clock by delta from its current reading (negative: back) and set its drift rate from now."}},
	}
}

// usage is the subcommand's usage line: "LATENCY <fixed> [<jitter>]".
func (s *fakeSub) usage() string {
	if s.args == "" {
		return s.name
	}
	return s.name + " " + s.args
}

// usageErr is the error text for a wrong number of arguments.
func (s *fakeSub) usageErr() string {
	if s.max == 0 {
		return "takes no arguments"
	}
	return "usage: FAKE " + s.usage()
}

// adminHelp returns FAKE HELP's lines, generated from fakeSubs.
func adminHelp() []string {
	out := []string{adminHelpHeader}
	for i := range fakeSubs {
		s := &fakeSubs[i]
		out = append(out, s.usage())
		for _, l := range s.help {
			out = append(out, "    "+l)
		}
	}
	return out
}

// lookupFakeSub finds a subcommand by its name in any case; nil if there
// is none.
func lookupFakeSub(name []byte) *fakeSub {
	upper := strings.ToUpper(string(name))
	for i := range fakeSubs {
		if upper == fakeSubs[i].name {
			return &fakeSubs[i]
		}
	}
	return nil
}

// cmdFake is the FAKE command: it finds the subcommand in fakeSubs, checks
// its argument count and runs it.
func cmdFake(n *Node, c cmdCtx) {
	s := lookupFakeSub(c.args[1])
	if s == nil {
		c.err("ERR unknown FAKE subcommand '" + trunc(c.args[1], 64) + "'. Try FAKE HELP.")
		return
	}
	x := adminCtx{cmdCtx: c, n: n, sub: s, a: c.args[2:]}
	if len(x.a) < s.min || (s.max >= 0 && len(x.a) > s.max) {
		x.bad(s.usageErr())
		return
	}
	s.run(x)
}

// adminCtx is what a FAKE subcommand sees: its arguments after the
// subcommand name, and the argument parsers that answer a clear error.
type adminCtx struct {
	cmdCtx
	n   *Node
	sub *fakeSub
	a   [][]byte
}

// bad answers "-ERR FAKE <SUB>: msg".
func (x adminCtx) bad(msg string) { x.err("ERR FAKE " + x.sub.name + ": " + msg) }

// dur parses argument i as a duration within maxAdminDur either way
// (LATENCY, DOWN, BLACKHOLE, RESTART, CLOCK).
func (x adminCtx) dur(i int, what string) (time.Duration, bool) {
	d, ok, inRange := parseDur(x.a[i])
	if !ok {
		x.bad("invalid " + what + " '" + trunc(x.a[i], 64) + "' (want e.g. 10ms, 2s or milliseconds)")
		return 0, false
	}
	if !inRange {
		x.bad(what + " '" + trunc(x.a[i], 64) + "' out of range (at most 100 years either way)")
		return 0, false
	}
	return d, true
}

// optDur parses the optional "[<duration>]" of DOWN and BLACKHOLE: none
// is 0.
func (x adminCtx) optDur() (time.Duration, bool) {
	if len(x.a) == 0 {
		return 0, true
	}
	return x.dur(0, "duration")
}

// faultDur parses argument i as a duration within maxFaultDuration
// (DELAY, PARTITION, CLOCKSTEP); negative only if neg.
func (x adminCtx) faultDur(i int, what string, neg bool) (time.Duration, bool) {
	b := x.a[i]
	d, ok, inRange := parseDur(b)
	if !ok || !inRange || (!neg && d < 0) || d > maxFaultDuration || d < -maxFaultDuration {
		x.bad("invalid " + what + " '" + trunc(b, 64) + "' (want e.g. 10ms, 2s or milliseconds; at most 1000h)")
		return 0, false
	}
	return d, true
}

// drift parses argument i as a clock drift rate (see validDrift).
func (x adminCtx) drift(i int) (float64, bool) {
	r, err := strconv.ParseFloat(string(x.a[i]), 64)
	if err != nil || !validDrift(r) {
		x.bad("invalid drift rate '" + trunc(x.a[i], 64) + "' (a float > -1, e.g. 0.01)")
		return 0, false
	}
	return r, true
}

// count parses argument i as a count >= 0 (FAILNEXT, MALFORM).
func (x adminCtx) count(i int) (int, bool) {
	k, ok := parseInt(x.a[i])
	if !ok || k < 0 {
		x.bad("invalid count '" + trunc(x.a[i], 64) + "'")
		return 0, false
	}
	return int(k), true
}

func fakeRefuseInfo(x adminCtx) {
	switch strings.ToUpper(string(x.a[0])) {
	case "ON":
		x.n.RefuseInfo(true)
	case "OFF":
		x.n.RefuseInfo(false)
	default:
		x.bad("want ON or OFF")
		return
	}
	x.ok()
}

func fakeHelp(x adminCtx) {
	lines := adminHelp()
	x.rc.WriteArray(len(lines))
	for _, l := range lines {
		x.rc.WriteString(l)
	}
}

func fakeLatency(x adminCtx) {
	fixed, ok := x.dur(0, "duration")
	if !ok {
		return
	}
	var jitter time.Duration
	if len(x.a) == 2 {
		if jitter, ok = x.dur(1, "jitter"); !ok {
			return
		}
	}
	if fixed < 0 || jitter < 0 {
		x.bad("durations must not be negative")
		return
	}
	x.n.SetLatency(fixed, jitter)
	x.ok()
}

func fakeDown(x adminCtx) {
	d, ok := x.optDur()
	if !ok {
		return
	}
	n := x.n
	x.ok()
	n.afterReply(x.cmdCtx, func() {
		gen := n.down()
		if d > 0 && n.sleep(d) {
			_, _ = n.upIf(gen) // not if the node was taken down again meanwhile
			n.timerRuns.Add(1)
		}
	})
}

func fakeBlackhole(x adminCtx) {
	d, ok := x.optDur()
	if !ok {
		return
	}
	n := x.n
	gen := n.blackhole()
	if d > 0 {
		n.goBG(func() {
			if n.sleep(d) {
				n.endBlackhole(gen) // this blackhole only, if still current
				n.timerRuns.Add(1)
			}
		})
	}
	x.ok()
}

func fakeRestart(x adminCtx) {
	lose := false
	var delay time.Duration
	for i, a := range x.a {
		switch {
		case eqFold(a, "lose"):
			lose = true
		case eqFold(a, "keep"):
			lose = false
		default:
			d, ok := x.dur(i, "delay")
			if !ok {
				return
			}
			delay = d
		}
	}
	n := x.n
	x.ok()
	n.afterReply(x.cmdCtx, func() { _ = n.Restart(lose, delay) })
}

func fakeClock(x adminCtx) {
	off, ok := x.dur(0, "offset")
	if !ok {
		return
	}
	var drift float64
	if len(x.a) == 2 {
		if drift, ok = x.drift(1); !ok {
			return
		}
	}
	x.n.SetClock(off, drift)
	x.ok()
}

func fakeFailNext(x adminCtx) {
	k, ok := x.count(0)
	if !ok {
		return
	}
	parts := make([]string, len(x.a)-1)
	for i, a := range x.a[1:] {
		parts[i] = string(a)
	}
	x.n.FailNext(k, strings.Join(parts, " "))
	x.ok()
}

func fakeMalform(x adminCtx) {
	k, ok := x.count(0)
	if !ok {
		return
	}
	x.n.MalformNext(k)
	x.ok()
}

func fakeDelay(x adminCtx) {
	fixed, ok := x.faultDur(1, "delay", false)
	if !ok {
		return
	}
	var jitter time.Duration
	if len(x.a) == 3 {
		if jitter, ok = x.faultDur(2, "jitter", false); !ok {
			return
		}
	}
	switch {
	case eqFold(x.a[0], "request"):
		x.n.SetRequestDelay(fixed, jitter)
	case eqFold(x.a[0], "reply"):
		x.n.SetReplyDelay(fixed, jitter)
	default:
		x.bad("direction must be REQUEST or REPLY, not '" + trunc(x.a[0], 64) + "'")
		return
	}
	x.ok()
}

func fakePartition(x adminCtx) {
	var d Direction
	switch {
	case eqFold(x.a[0], "requests"):
		d = Requests
	case eqFold(x.a[0], "replies"):
		d = Replies
	case eqFold(x.a[0], "none"):
		d = NoPartition
	default:
		x.bad("direction must be REQUESTS, REPLIES or NONE, not '" + trunc(x.a[0], 64) + "'")
		return
	}
	var after time.Duration
	if len(x.a) == 2 {
		var ok bool
		if after, ok = x.faultDur(1, "duration", false); !ok {
			return
		}
	}
	n := x.n
	gen := n.partition(d)
	if after > 0 && d != NoPartition {
		n.goBG(func() {
			if n.sleep(after) {
				n.endPartition(gen) // this partition only, if still current
				n.timerRuns.Add(1)
			}
		})
	}
	x.ok()
}

func fakeThroughput(x adminCtx) {
	r, err := strconv.ParseFloat(string(x.a[0]), 64)
	if err != nil || math.IsNaN(r) || math.IsInf(r, 0) || r < 0 || r > 1e9 {
		x.bad("invalid rate '" + trunc(x.a[0], 64) + "' (commands per second, 0..1e9; 0 = no cap)")
		return
	}
	x.n.SetThroughput(r)
	x.ok()
}

func fakeClockStep(x adminCtx) {
	delta, ok := x.faultDur(0, "delta", true)
	if !ok {
		return
	}
	var rate float64
	if len(x.a) == 2 {
		if rate, ok = x.drift(1); !ok {
			return
		}
	}
	x.n.StepClock(delta, rate)
	x.ok()
}

// maxAdminDur bounds every duration the admin command accepts (and clock
// offsets from Go): 100 years either way, far inside time.Duration's range
// and the node clock's int64 nanoseconds.
const maxAdminDur = 100 * 365 * 24 * time.Hour

// maxFaultDuration bounds the durations of DELAY, PARTITION and CLOCKSTEP.
const maxFaultDuration = 1000 * time.Hour

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
