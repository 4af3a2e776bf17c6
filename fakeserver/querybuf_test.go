package fakeserver

import (
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Requests still arriving on many connections hold at most
// QueryBufferLimit on the node: the connections whose requests would pass
// it get a protocol error and are closed, the node keeps serving, and the
// budget comes back when connections go (issue 34, R10: 1,000 half-sent
// 1 MiB SETs took the process to 2.4 GB).
func TestQueryBufferLimit(t *testing.T) {
	const limit = 8 << 20
	n := startNode(t, Config{QueryBufferLimit: limit})
	half := make([]byte, 600<<10) // 600 KiB of a 1 MiB value
	var refused atomic.Int32
	var wg sync.WaitGroup
	conns := make([]net.Conn, 40) // 24 MiB of requests in flight
	for i := range conns {
		c, err := net.Dial("tcp", n.Addr())
		if err != nil {
			t.Fatal(err)
		}
		conns[i] = c
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = c.Write([]byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1048576\r\n"))
			_, _ = c.Write(half)
			b, _ := io.ReadAll(c) // the refusal and the close, or nothing until the test closes it
			if strings.Contains(string(b), "query buffer limit") {
				refused.Add(1)
			}
		}()
	}
	deadline := time.Now().Add(20 * time.Second)
	for refused.Load() < 10 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := refused.Load(); got < 10 {
		t.Fatalf("24 MiB of half-sent requests under an 8 MiB limit: only %d of 40 connections refused", got)
	}
	if got := n.qbuf.Load(); got > limit {
		t.Fatalf("charged %d > limit %d", got, limit)
	}
	c := dial(t, n.Addr())
	if r := c.do("PING"); r != "+PONG\r\n" {
		t.Fatalf("PING: %q", r)
	}
	for _, h := range conns {
		_ = h.Close()
	}
	wg.Wait()
	for n.qbuf.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("still charged %d after the connections closed", n.qbuf.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if r := c.do("SET", "k", strings.Repeat("y", 1<<20)); r != "+OK\r\n" {
		t.Fatalf("a whole 1 MiB SET after: %q", r)
	}
	runtime.KeepAlive(half)
}
