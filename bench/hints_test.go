package bench

import (
	"bytes"
	"net"
	"strings"
	"sync"
	"testing"
)

// peer listens on a free loopback port and serves every connection with
// serve until the test ends (the listener and its connections are closed).
func peer(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 100; i++ { // bounded: the command dials a handful
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() { defer wg.Done(); serve(c) }()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// Issue 48 item 9: the usage and connection errors a new user meets name
// their likely cause.
func TestErrorsNameTheLikelyCause(t *testing.T) {
	// An HTTP server: its first reply begins with 'H', no RESP type.
	httpAddr := peer(t, func(c net.Conn) {
		buf := make([]byte, 4096)
		for {
			if _, err := c.Read(buf); err != nil {
				return
			}
			if _, err := c.Write([]byte("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")); err != nil {
				return
			}
		}
	})
	// A plaintext server waits for a command: it never answers a TLS hello.
	silentAddr := peer(t, func(c net.Conn) {
		buf := make([]byte, 4096)
		for {
			if _, err := c.Read(buf); err != nil {
				return
			}
		}
	})
	run := []string{"-d", "100ms", "-warmup", "0s", "-out", "", "-strategy", "seq"}
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"sweep given a run's flag", []string{"sweep", "-segment", "0/2"}, ExitUsage, "-segment is a flag of a run, redmux-bench -segment ..., not of redmux-bench sweep"},
		{"run given sweep's flag", []string{"-rates", "1,2"}, ExitUsage, "-rates is a flag of redmux-bench sweep, not of a run"},
		{"hold min above max", []string{"-hold", "uniform:5ms:1ms"}, ExitUsage, "min 5ms is above max 1ms"},
		{"not a Redis server", append([]string{"-nodes", httpAddr}, run...), ExitFailure, "is this a Redis server?"},
		{"TLS to plaintext", append([]string{"-nodes", silentAddr, "-tls", "-insecure"}, run...), ExitFailure, "does the node speak TLS?"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Main(tc.args, &out, &errb, noEnv)
			msg := errb.String()
			if code != tc.code || !strings.Contains(msg, tc.want) {
				t.Fatalf("exit %d, want %d; %q does not say %q", code, tc.code, msg, tc.want)
			}
		})
	}
	// A flag neither command has gets Go's message alone.
	var out, errb bytes.Buffer
	if code := Main([]string{"sweep", "-bogus"}, &out, &errb, noEnv); code != ExitUsage || strings.Contains(errb.String(), "is a flag of") {
		t.Fatalf("exit %d: %q", code, errb.String())
	}
}
