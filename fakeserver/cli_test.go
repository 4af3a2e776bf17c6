package fakeserver

import (
	"bufio"
	"context"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestCLIServesUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Main(ctx, []string{"-nodes", "3", "-port", "0", "-password", "hunter2",
			"-latency", "0,30ms,0", "-blackhole", "2", "-fail-next", "0,0,0"}, pw, io.Discard)
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	var addrs []string
	for len(addrs) < 3 && sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, "hunter2") {
			t.Errorf("password printed: %q", line)
		}
		addr, ok := strings.CutPrefix(line, "ready ")
		if !ok {
			t.Fatalf("unexpected line %q", line)
		}
		addrs = append(addrs, addr)
	}
	rest := make(chan string, 1)
	go func() {
		var b strings.Builder
		_, _ = io.Copy(&b, pr)
		rest <- b.String()
	}()
	if len(addrs) != 3 {
		t.Fatalf("got %d ready lines", len(addrs))
	}
	ask := func(addr, req string, wait time.Duration) (string, error) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return "", err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(wait))
		if _, err := c.Write([]byte(req)); err != nil {
			return "", err
		}
		r := bufio.NewReader(c)
		var out string
		for i := 0; i < strings.Count(req, "\n"); i++ {
			l, err := r.ReadString('\n')
			out += l
			if err != nil {
				return out, err
			}
		}
		return out, nil
	}
	if r, err := ask(addrs[0], "PING\r\n", 2*time.Second); err != nil || r != "-NOAUTH Authentication required.\r\n" {
		t.Errorf("node 0 without auth: %q %v", r, err)
	}
	start := time.Now()
	if r, err := ask(addrs[1], "AUTH hunter2\r\nPING\r\n", 2*time.Second); err != nil || r != "+OK\r\n+PONG\r\n" {
		t.Errorf("node 1: %q %v", r, err)
	}
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Errorf("node 1 latency flag not applied: %v", d)
	}
	if r, err := ask(addrs[2], "AUTH hunter2\r\n", 200*time.Millisecond); err == nil {
		t.Errorf("blackholed node 2 answered %q", r)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Main: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Main did not return after cancel")
	}
	if out := <-rest; out != "stopped 3 nodes\n" {
		t.Errorf("output after the ready lines: %q, want the stop line", out)
	}
	for _, a := range addrs {
		if c, err := net.DialTimeout("tcp", a, time.Second); err == nil {
			c.Close()
			t.Errorf("%s still accepting after shutdown", a)
		}
	}
}

func TestCLIFixedPortsAndDown(t *testing.T) {
	// Consecutive fixed ports can be taken by another test process between
	// choosing and binding them: retry that clash a few times, never more.
	for attempt := 1; ; attempt++ {
		err := runFixedPortsAndDown(t, freeConsecutivePorts(t, 2))
		if err == nil {
			return
		}
		if !strings.Contains(err.Error(), "address already in use") || attempt == 5 {
			t.Fatal(err)
		}
		t.Logf("attempt %d: %v; retrying with other ports", attempt, err)
	}
}

// freeConsecutivePorts returns a port P such that P..P+n-1 could all be
// bound on 127.0.0.1 a moment ago.
func freeConsecutivePorts(t *testing.T, n int) int {
	t.Helper()
	for try := 0; try < 50; try++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		ls := []net.Listener{l}
		ok := true
		for k := 1; k < n; k++ {
			lk, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+k))
			if err != nil {
				ok = false
				break
			}
			ls = append(ls, lk)
		}
		for _, x := range ls {
			x.Close()
		}
		if ok {
			return port
		}
	}
	t.Fatalf("no %d consecutive free ports found", n)
	return 0
}

// runFixedPortsAndDown runs two nodes from port with node 1 down; it
// returns Main's error if the nodes could not start.
func runFixedPortsAndDown(t *testing.T, port int) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Main(ctx, []string{"-nodes", "2", "-port", strconv.Itoa(port), "-down", "1"}, pw, io.Discard)
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	var lines []string
	for len(lines) < 2 && sc.Scan() {
		lines = append(lines, sc.Text())
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	want := []string{"ready 127.0.0.1:" + strconv.Itoa(port), "ready 127.0.0.1:" + strconv.Itoa(port+1)}
	if len(lines) == 0 {
		if err := <-done; err != nil {
			return err
		}
	}
	if strings.Join(lines, "|") != strings.Join(want, "|") {
		t.Fatalf("lines %q, want %q", lines, want)
	}
	time.Sleep(50 * time.Millisecond)
	if c, err := net.DialTimeout("tcp", strings.TrimPrefix(want[1], "ready "), time.Second); err == nil {
		c.Close()
		t.Error("node 1 started with -down accepts connections")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return nil
}

func TestCLIBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-nodes", "0"},
		{"-nodes", "3", "-latency", "1ms,2ms"},
		{"-latency", "fast"},
		{"-down", "9"},
		{"-port", "65535", "-nodes", "2"},
		{"-bogus"},
		{"extra"},
		{"-port", "0", "-clock-drift", "NaN"},
		{"-port", "0", "-clock-drift", "-1"},
		{"-port", "0", "-clock-offset", "1000000h"},
		// negative latencies and counts (accepted silently before)
		{"-port", "0", "-latency", "-5ms"},
		{"-port", "0", "-jitter", "1ms,-1ms,0,0,0"},
		{"-port", "0", "-fail-next", "-1"},
		{"-port", "0", "-malform-next", "-2"},
		{"-port", "0", "-sweep", "0"},
	} {
		err := Main(context.Background(), args, io.Discard, io.Discard)
		if err == nil {
			t.Errorf("%q: no error", args)
		}
		if ExitCode(err) != 2 {
			t.Errorf("%q: exit status %d for a usage error, want 2", args, ExitCode(err))
		}
	}
}

// TestRunFailureExitsOne: a port already in use is a run failure (exit 1,
// not the usage status 2).
func TestRunFailureExitsOne(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	err = Main(context.Background(), []string{"-nodes", "1", "-port", strconv.Itoa(port)}, io.Discard, io.Discard)
	if err == nil || ExitCode(err) != 1 {
		t.Fatalf("port in use: err %v, exit status %d, want 1", err, ExitCode(err))
	}
}
