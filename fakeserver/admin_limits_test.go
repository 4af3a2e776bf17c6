package fakeserver

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// TestAdminRefusesNaNAndOverflow (issue 16 D9): a NaN drift rate was
// accepted, and a millisecond count too large for a time.Duration wrapped
// around silently (9999999999999999 ms set a 448 ms latency). Both must be
// refused with a clear error and leave the node's state unchanged.
func TestAdminRefusesNaNAndOverflow(t *testing.T) {
	n := startNode(t, Config{})
	c := dial(t, n.Addr())
	const huge = "9999999999999999"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"FAKE", "CLOCK", "0", "NaN"}, "-ERR FAKE CLOCK: invalid drift rate 'NaN' (a float > -1, e.g. 0.01)\r\n"},
		{[]string{"FAKE", "CLOCK", "0", "nan"}, "-ERR FAKE CLOCK: invalid drift rate 'nan' (a float > -1, e.g. 0.01)\r\n"},
		{[]string{"FAKE", "CLOCK", "0", "Inf"}, "-ERR FAKE CLOCK: invalid drift rate 'Inf' (a float > -1, e.g. 0.01)\r\n"},
		{[]string{"FAKE", "CLOCK", huge}, "-ERR FAKE CLOCK: offset '" + huge + "' out of range (at most 100 years either way)\r\n"},
		{[]string{"FAKE", "CLOCK", "-" + huge}, "-ERR FAKE CLOCK: offset '-" + huge + "' out of range (at most 100 years either way)\r\n"},
		{[]string{"FAKE", "CLOCK", "1000000h"}, "-ERR FAKE CLOCK: offset '1000000h' out of range (at most 100 years either way)\r\n"},
		{[]string{"FAKE", "LATENCY", huge}, "-ERR FAKE LATENCY: duration '" + huge + "' out of range (at most 100 years either way)\r\n"},
		{[]string{"FAKE", "LATENCY", "1ms", huge}, "-ERR FAKE LATENCY: jitter '" + huge + "' out of range (at most 100 years either way)\r\n"},
		{[]string{"FAKE", "LATENCY", "99999999999h"}, "-ERR FAKE LATENCY: invalid duration '99999999999h' (want e.g. 10ms, 2s or milliseconds)\r\n"},
		{[]string{"FAKE", "DOWN", huge}, "-ERR FAKE DOWN: duration '" + huge + "' out of range (at most 100 years either way)\r\n"},
		{[]string{"FAKE", "BLACKHOLE", huge}, "-ERR FAKE BLACKHOLE: duration '" + huge + "' out of range (at most 100 years either way)\r\n"},
		{[]string{"FAKE", "RESTART", "LOSE", huge}, "-ERR FAKE RESTART: delay '" + huge + "' out of range (at most 100 years either way)\r\n"},
	} {
		eqReply(t, fmt.Sprint(tc.args), c.do(tc.args...), tc.want)
	}
	n.mu.Lock()
	off, drift := n.clockOff, n.drift
	n.mu.Unlock()
	if off != 0 || drift != 0 || math.IsNaN(drift) {
		t.Errorf("clock changed by refused commands: offset %v drift %v", time.Duration(off), drift)
	}
	if f, j := n.latency(); f != 0 || j != 0 {
		t.Errorf("latency changed by refused commands: %v %v", f, j)
	}
	if n.IsDown() || n.hole.Load() != nil {
		t.Error("node went down or black-holed by a refused command")
	}
	eqReply(t, "still serving", c.do("PING"), pongReply)

	// the Go API refuses the same values
	for _, tc := range []struct {
		off   time.Duration
		drift float64
	}{{0, math.NaN()}, {0, math.Inf(1)}, {0, -1}, {maxAdminDur + 1, 0}, {-maxAdminDur - 1, 0}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("SetClock(%v, %v) accepted", tc.off, tc.drift)
				}
			}()
			n.SetClock(tc.off, tc.drift)
		}()
	}
}
