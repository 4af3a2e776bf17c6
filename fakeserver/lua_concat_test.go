package fakeserver

import (
	"context"
	"strings"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// table.concat is native (tableConcat): Lua 5.1's semantics, linear time.
// The expected replies are real redis-server 7.0.15's.
func TestLuaTableConcatSemantics(t *testing.T) {
	n := startNode(t, Config{})
	c := dial(t, n.Addr())
	for _, tc := range []struct{ script, want string }{
		{`return table.concat({1, 2, 3}, ", ")`, bulk("1, 2, 3")},
		{`return table.concat({"a", "b", "c"}, "-", 2)`, bulk("b-c")},
		{`return table.concat({"a", "b", "c"}, "-", 2, 3)`, bulk("b-c")},
		{`return table.concat({"a", "b", "c"}, "-", 3, 2)`, bulk("")},
		{`return table.concat({"a", "b", "c"}, "", 1, 1)`, bulk("a")},
		{`return table.concat({}, "x")`, bulk("")},
		{`return table.concat({"a", "b"}, 1)`, bulk("a1b")},
		{`return table.concat({1.5, "x", -2})`, bulk("1.5x-2")},
		{`return table.concat({[0] = "z", "a"}, ",", 0)`, bulk("z,a")},
		{`return table.concat({"a", {}, "c"})`, "-ERR user_script:1: invalid value (table) at index 2 in table for 'concat' script: "},
		{`return table.concat({"a", true})`, "-ERR user_script:1: invalid value (boolean) at index 2 in table for 'concat' script: "},
		{`return table.concat({"a", "b"}, ",", 1, 3)`, "-ERR user_script:1: invalid value (nil) at index 3 in table for 'concat' script: "},
		{`return table.concat({}, ",", 1, 2)`, "-ERR user_script:1: invalid value (nil) at index 1 in table for 'concat' script: "},
		{`return table.concat({"a"}, ",", 0)`, "-ERR user_script:1: invalid value (nil) at index 0 in table for 'concat' script: "},
	} {
		if r := c.do("EVAL", tc.script, "0"); !strings.HasPrefix(r, tc.want) {
			t.Errorf("%s: %q, want prefix %q", tc.script, r, tc.want)
		}
	}
}

// gopher-lua's table.concat pushed every element onto its stack, grown 32
// slots at a time with a full copy each: 80,000 elements took 9 s, 200,000
// about a minute, and the node answered BUSY meanwhile (real Redis: 0.08 s
// for a million).
func TestLuaTableConcatLinear(t *testing.T) {
	n := startNode(t, Config{ScriptBusyAfter: 20 * time.Second, ScriptKillAfter: 120 * time.Second})
	c := dial(t, n.Addr())
	c.send("EVAL", `local t={} for i=1,200000 do t[i]='x' end return #table.concat(t)`, "0")
	r, err := c.tryRead(10 * time.Second)
	if err != nil {
		t.Fatalf("no answer within 10 s: %v", err)
	}
	eqReply(t, "length", r, ":200000\r\n")
}

// A kill (SCRIPT KILL, ScriptKillAfter, the heap watcher: the script's
// context is cancelled) stops table.concat while it builds.
func TestLuaTableConcatHonoursKill(t *testing.T) {
	L := lua.NewState()
	defer L.Close()
	tbl := L.NewTable()
	for i := 1; i <= 5000; i++ {
		tbl.RawSetInt(i, lua.LString("x"))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	L.SetContext(ctx)
	L.Push(L.NewFunction(tableConcat))
	L.Push(tbl)
	err := L.PCall(1, 1, nil)
	if err == nil || !strings.Contains(err.Error(), "script killed") {
		t.Fatalf("concat under a cancelled context: %v, want the script killed", err)
	}
}
