//go:build linux && !redmux_portable && (amd64 || arm64 || riscv64 || loong64 || ppc64le)

package mux

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/redmux/redmux/resp"
)

// connHeap returns the Go heap in use per connection of a client on
// transport tr with conns connections to each of addrs, each connection
// used once (its buffers as a lock workload leaves them), measured after
// a full collection, less the heap before New.
func connHeap(t *testing.T, tr Transport, addrs []string, conns int) (perConn float64, transport string) {
	t.Helper()
	saved := testTransport
	testTransport = tr // an unnamed transport is the test's: name it here
	defer func() { testTransport = saved }()
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapInuse
	}
	before := heap()
	// a generous Timeout: this measures memory, and CI beside other work
	// once saw a fresh connection's first SET miss the 50ms default
	c, err := New(Config{Addrs: addrs, Conns: conns, Scripts: lockScripts(), Transport: tr, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b := c.NewBatch()
	for k := 0; k < conns; k++ {
		b.Reset()
		b.route = uint32(k)
		b.Broadcast(resp.AppendCommand(nil, "SET", "connheap", "v", "PX", "1000"))
		if out, err := c.Do(context.Background(), b, Policy{}); err != nil || out.Successes != c.N() {
			t.Fatalf("%v: connection %d: %+v %v", tr, k, out, err)
		}
	}
	after := heap()
	runtime.KeepAlive(b)
	return float64(int64(after)-int64(before)) / float64(len(c.conns)), c.Transport()
}

// TestConnHeap (issue 34, R7): the Go heap a connection costs on
// io_uring is within 2x epoll's. Its two send buffers (one in flight, one
// collecting) were 64 KiB each from the dial: 3,600 connections held
// 484.5 MB of heap against 10.7 MB on epoll. They now grow to the bytes
// written (a lock workload's few hundred) and stay, up to 64 KiB, as the
// epoll connection's write queue does.
func TestConnHeap(t *testing.T) {
	requireURing(t)
	if testing.Short() {
		t.Skip("starts 8 fake nodes and 512 connections")
	}
	addrs := startChild(t, 8)
	const conns = 64 // per node (MaxConns): 512 connections
	ep, epName := connHeap(t, TransportEpoll, addrs, conns)
	ur, urName := connHeap(t, TransportIOURing, addrs, conns)
	t.Logf("Go heap per connection: %s %.0f B, %s %.0f B (%d connections each)", epName, ep, urName, ur, len(addrs)*conns)
	if epName != "epoll" || urName != "io_uring" {
		t.Fatalf("transports %q and %q", epName, urName)
	}
	if ur > 2*ep {
		t.Fatalf("io_uring's %.0f B per connection is more than twice epoll's %.0f B", ur, ep)
	}
}
