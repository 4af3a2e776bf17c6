package fakeserver

import (
	"fmt"
	"strings"
	"testing"
)

// TestFakeHelpListsEveryTableEntry: FAKE HELP is generated from fakeSubs,
// so every subcommand's usage line is in it, followed by its help lines,
// and HELP lists nothing else.
func TestFakeHelpListsEveryTableEntry(t *testing.T) {
	n := startNode(t, Config{})
	c := dial(t, n.Addr())
	got := c.do("FAKE", "HELP")
	want := 1
	for _, s := range fakeSubs {
		want += 1 + len(s.help)
	}
	if !hasPrefix(got, fmt.Sprintf("*%d\r\n+%s\r\n", want, adminHelpHeader)) {
		t.Fatalf("FAKE HELP = %.80q, want %d lines starting with the header", got, want)
	}
	for _, s := range fakeSubs {
		t.Run(s.name, func(t *testing.T) {
			if len(s.help) == 0 {
				t.Fatal("no help text")
			}
			block := "+" + s.usage() + "\r\n"
			for _, l := range s.help {
				block += "+    " + l + "\r\n"
			}
			if !strings.Contains(got, block) {
				t.Errorf("FAKE HELP lacks %q", block)
			}
			if strings.ToUpper(s.name) != s.name || s.min < 0 || (s.max >= 0 && s.max < s.min) || s.run == nil {
				t.Errorf("malformed table entry: %+v", s)
			}
		})
	}
}

// TestFakeBadArguments: every subcommand answers a wrong argument count
// with its usage (derived from the table) and each malformed argument with
// an error that names it. Every subcommand that takes arguments has a
// malformed-argument case here.
func TestFakeBadArguments(t *testing.T) {
	n := startNode(t, Config{})
	c := dial(t, n.Addr())
	for _, s := range fakeSubs {
		want := "-ERR FAKE " + s.name + ": usage: FAKE " + s.usage() + "\r\n"
		if s.max == 0 {
			want = "-ERR FAKE " + s.name + ": takes no arguments\r\n"
		}
		if s.min > 0 {
			args := append([]string{"FAKE", strings.ToLower(s.name)}, strings.Split(strings.Repeat("1,", s.min-1), ",")[:s.min-1]...)
			eqReply(t, fmt.Sprint(args), c.do(args...), want)
		}
		if s.max >= 0 {
			args := append([]string{"FAKE", s.name}, strings.Split(strings.Repeat("1,", s.max+1), ",")[:s.max+1]...)
			eqReply(t, fmt.Sprint(args), c.do(args...), want)
		}
	}

	const dur = "(want e.g. 10ms, 2s or milliseconds)"
	const faultDur = "(want e.g. 10ms, 2s or milliseconds; at most 1000h)"
	bad := []struct {
		args []string
		want string
	}{
		{[]string{"LATENCY", "soon"}, "invalid duration 'soon' " + dur},
		{[]string{"LATENCY", "1ms", "lots"}, "invalid jitter 'lots' " + dur},
		{[]string{"LATENCY", "1ms", "-1ms"}, "durations must not be negative"},
		{[]string{"DOWN", "x"}, "invalid duration 'x' " + dur},
		{[]string{"BLACKHOLE", "1parsec"}, "invalid duration '1parsec' " + dur},
		{[]string{"RESTART", "MAYBE"}, "invalid delay 'MAYBE' " + dur},
		{[]string{"CLOCK", "later"}, "invalid offset 'later' " + dur},
		{[]string{"CLOCK", "1s", "-1"}, "invalid drift rate '-1' (a float > -1, e.g. 0.01)"},
		{[]string{"CLOCK", "1000000h"}, "offset '1000000h' out of range (at most 100 years either way)"},
		{[]string{"FAILNEXT", "-1", "ERR x"}, "invalid count '-1'"},
		{[]string{"MALFORM", "two"}, "invalid count 'two'"},
		{[]string{"DELAY", "REQUEST", "-1ms"}, "invalid delay '-1ms' " + faultDur},
		{[]string{"DELAY", "UP", "1ms"}, "direction must be REQUEST or REPLY, not 'UP'"},
		{[]string{"PARTITION", "SIDEWAYS"}, "direction must be REQUESTS, REPLIES or NONE, not 'SIDEWAYS'"},
		{[]string{"PARTITION", "REQUESTS", "1001h"}, "invalid duration '1001h' " + faultDur},
		{[]string{"THROUGHPUT", "2e9"}, "invalid rate '2e9' (commands per second, 0..1e9; 0 = no cap)"},
		{[]string{"CLOCKSTEP", "yesterday"}, "invalid delta 'yesterday' " + faultDur},
		{[]string{"CLOCKSTEP", "1s", "Inf"}, "invalid drift rate 'Inf' (a float > -1, e.g. 0.01)"},
		{[]string{"REFUSE-INFO", "maybe"}, "want ON or OFF"},
	}
	covered := map[string]bool{}
	for _, tc := range bad {
		covered[tc.args[0]] = true
		args := append([]string{"FAKE"}, tc.args...)
		eqReply(t, fmt.Sprint(args), c.do(args...), "-ERR FAKE "+tc.args[0]+": "+tc.want+"\r\n")
	}
	for _, s := range fakeSubs {
		if s.max != 0 && s.name != "HELP" && !covered[s.name] {
			t.Errorf("FAKE %s takes arguments but has no malformed-argument case", s.name)
		}
	}
	eqReply(t, "unknown", c.do("FAKE", "NOPE"), "-ERR unknown FAKE subcommand 'NOPE'. Try FAKE HELP.\r\n")
	if n.IsDown() || n.hole.Load() != nil || n.infoRefused.Load() || n.Partitioned() != NoPartition || n.Throughput() != 0 || n.ClockSkew() > 1e9 {
		t.Error("a refused FAKE command changed the node")
	}
	eqReply(t, "still serving", c.do("PING"), pongReply)
}
