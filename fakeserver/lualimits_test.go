package fakeserver

import (
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"
)

// Issue 23: single built-ins that ran long or allocated without bound
// (the time limit and the heap watcher act between Lua instructions) fail
// their script with an error; the node and the process go on. Counted:
// every hostile script gets an error reply, every legitimate one its
// answer, the node answers PING after each.
func TestLuaBuiltinLimits(t *testing.T) {
	n := startNode(t, Config{ScriptBusyAfter: 5 * time.Second, ScriptKillAfter: 10 * time.Second})
	c := dial(t, n.Addr())
	for _, tc := range []struct{ name, script, want string }{
		// Backtracking: a 44-byte pattern script that ran 19 s.
		{"pattern", `return string.match(string.rep("a",40),("(.-)"):rep(9).."X")`, "-ERR user_script:1: pattern too complex"},
		{"find", `return string.find(string.rep("a",5000),string.rep("a*",6).."b")`, "-ERR user_script:1: pattern too complex"},
		{"gmatch", `for w in string.gmatch(string.rep("a",5000),"a-a-a-b") do end`, "-ERR user_script:1: pattern too complex"},
		{"gsub pattern", `return string.gsub(string.rep("a",3000),"(a*)(a*)b","")`, "-ERR user_script:1: pattern too complex"},
		{"back reference", `return string.find(string.rep("a",9000),"(.-)%1b")`, "-ERR user_script:1: pattern too complex"},
		// Results too large, or too costly to build.
		{"gsub string", `return #string.gsub(string.rep("x",100000),"x",string.rep("y",1000))`, "-ERR user_script:1: resulting string too large"},
		{"gsub quadratic", `return #string.gsub(string.rep("x",1000000),"x","y")`, "-ERR user_script:1: gsub result too costly"},
		{"gsub table", `local t={x=string.rep("y",1000000)} return #string.gsub(string.rep("x",1000),"x",t)`, "-ERR user_script:1: resulting string too large"},
		{"gsub func", `local y=string.rep("y",1000000) return #string.gsub(string.rep("x",1000),"x",function() return y end)`, "-ERR user_script:1: resulting string too large"},
		{"table.concat", `local t={} local s=string.rep("x",1000000) for i=1,2000 do t[i]=s end return #table.concat(t)`, "-ERR user_script:1: resulting string too large"},
		{"format width", `return string.format("%999999d", 1)`, "-ERR user_script:1: invalid format (width or precision too long)"},
		{"format total", `local f=string.rep("%99d",1000000) return #string.format(f,1)`, "-ERR user_script:1: resulting string too large"},
		// Legitimate uses still answer.
		{"format ok", `return string.format("%5.2f|%-3s|%d%%", 3.14159, "ab", 7)`, "$12\r\n 3.14|ab |7%\r\n"},
		{"match ok", `return string.match("hello world","^(%w+)")`, "$5\r\nhello\r\n"},
		{"back reference ok", `return string.match("say hello hello","(%w+) %1")`, "$5\r\nhello\r\n"},
		{"find plain", `return string.find(string.rep("a",100000).."(.-)","(.-)",1,true)`, ":100001\r\n"},
		{"gsub ok", `return (string.gsub(string.rep("a ",1000),"%s+",""))`, "$1000\r\n"},
		{"gsub func ok", `return (string.gsub("a,b","%w",function(s) return s..s end))`, "$5\r\naa,bb\r\n"},
		{"gsub table ok", `return (string.gsub("$x $y","%$(%w+)",{x="1"}))`, "$4\r\n1 $y\r\n"},
		{"concat ok", `local t={} for i=1,1000 do t[i]="ab" end return #table.concat(t,",")`, ":2999\r\n"},
	} {
		r := c.do("EVAL", tc.script, "0")
		if !hasPrefix(r, tc.want) {
			t.Errorf("%s: %.200q, want prefix %q", tc.name, r, tc.want)
		}
		eqReply(t, tc.name+": alive", c.do("PING"), pongReply)
	}
}

// A loop doubling a string with `..` (one instruction per step) is stopped
// by the heap watcher: the script fails, the process lives, and the heap
// it grew peaks near maxScriptHeap (it reached 1.7-3.8 GB before).
func TestLuaConcatMemoryBudget(t *testing.T) {
	n := startNode(t, Config{ScriptBusyAfter: 5 * time.Second, ScriptKillAfter: 20 * time.Second})
	c := dial(t, n.Addr())
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	base := sample[0].Value.Uint64()
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for {
			select {
			case <-stop:
				return
			default:
			}
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			time.Sleep(200 * time.Microsecond)
		}
	}()
	start := time.Now()
	c.send("EVAL", `local s=string.rep("x",1000000) for i=1,40 do s=s..s end return #s`, "0")
	r, err := c.tryRead(60 * time.Second) // a guard: the kill comes from the heap budget, not a timer
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	close(stop)
	<-done
	grown := peak.Load() - min(base, peak.Load())
	t.Logf("doubling script: %.60q after %v; heap grew at most %.0f MB (maxScriptHeap %d MB)", r, took, float64(grown)/1e6, maxScriptHeap>>20)
	// The heap budget stops it; on a loaded machine (-race, other
	// packages' tests) each doubling is slow enough that the 20s run limit
	// may come first. Either way the script fails, not the process, and
	// the heap stays bounded (below).
	if !hasPrefix(r, "-ERR fake server: script stopped after using more than") &&
		!hasPrefix(r, "-ERR fake server: script killed after running for") {
		t.Errorf("doubling script replied %.200q", r)
	}
	if grown > 4*maxScriptHeap {
		t.Errorf("heap grew %d MB, budget %d MB", grown>>20, maxScriptHeap>>20)
	}
	eqReply(t, "alive", c.do("PING"), pongReply)
}
