package fakeserver

import (
	"context"
	"net"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redmux/redmux/internal/redisproc/redistest"
	"github.com/redmux/redmux/redlock/scripts"
)

func requireTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if redistest.Required() {
			t.Fatalf("%s is not installed but %s is set", name, redistest.EnvRequire)
		}
		t.Skipf("SKIPPED: %s is not installed; this test did NOT run", name)
	}
	return p
}

func runTool(t *testing.T, stdin string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, requireTool(t, name), args...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return string(out)
}

func portOf(t *testing.T, addr string) string {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRedisCLI(t *testing.T) {
	n := startNode(t, Config{})
	p := portOf(t, n.Addr())
	if out := runTool(t, "", "redis-cli", "-p", p, "set", "k", "v", "nx", "px", "1000"); out != "OK\n" {
		t.Errorf("set: %q", out)
	}
	if out := runTool(t, "", "redis-cli", "-p", p, "eval", scripts.Release.Text, "1", "k", "v"); out != "1\n" {
		t.Errorf("eval release: %q", out)
	}
	if out := runTool(t, "", "redis-cli", "-p", p, "get", "k"); out != "\n" {
		t.Errorf("get after release: %q", out)
	}
	// interactive mode (commands on stdin): redis-cli asks COMMAND DOCS first
	out := runTool(t, "set a 1\nget a\nincr a\nttl a\nhello 3\nget nokey\nfake help\n", "redis-cli", "-p", p)
	for _, want := range []string{"OK\n", "1\n", "2\n", "-1\n", "proto 3\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("interactive output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "ERR") {
		t.Errorf("interactive output has an error:\n%s", out)
	}
	// password and RESP3 through redis-cli's own options
	m := startNode(t, Config{Password: "pw"})
	if out := runTool(t, "", "redis-cli", "-p", portOf(t, m.Addr()), "--no-auth-warning", "-a", "pw", "-3", "ping"); out != "PONG\n" {
		t.Errorf("auth+resp3 ping: %q", out)
	}
}

func TestRedisBenchmark(t *testing.T) {
	n := startNode(t, Config{})
	out := runTool(t, "", "redis-benchmark", "-p", portOf(t, n.Addr()), "-t", "ping,set,get", "-n", "20000", "-q")
	for _, want := range []string{"PING_INLINE:", "PING_MBULK:", "SET:", "GET:"} {
		if !strings.Contains(out, want+" ") || !strings.Contains(out, "requests per second") {
			t.Errorf("redis-benchmark output lacks %q:\n%s", want, out)
		}
	}
	low := strings.ToLower(out)
	if strings.Contains(low, "error") || strings.Contains(low, "warning") {
		t.Errorf("redis-benchmark reported a problem:\n%s", out)
	}
	if got := n.Stats().Commands; got < 80000 {
		t.Errorf("node saw %d commands, want >= 80000", got)
	}
}

func TestNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	cl, err := StartCluster(3, Config{})
	if err != nil {
		t.Fatal(err)
	}
	n0, n1, n2 := cl.Nodes[0], cl.Nodes[1], cl.Nodes[2]
	n0.SetLatency(20*time.Millisecond, 0) // writer goroutines
	var conns []net.Conn
	for _, a := range cl.Addrs() {
		c, err := net.Dial("tcp", a)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		_, _ = c.Write(enc("SET", "k", "v"))
	}
	n1.Blackhole() // a handler waiting in the blackhole
	_, _ = conns[1].Write(enc("GET", "k"))
	c2, _ := net.Dial("tcp", n2.Addr())
	_, _ = c2.Write(enc("FAKE", "DOWN", "10s")) // background re-up timer
	_, _ = conns[0].Write([]byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$10\r\nab"))
	time.Sleep(100 * time.Millisecond)
	if err := cl.Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range append(conns, c2) {
		c.Close()
	}
	deadline := time.Now().Add(3 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > before {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines after Close, %d before:\n%s", g, before, buf[:runtime.Stack(buf, true)])
	}
}
