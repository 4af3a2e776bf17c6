//go:build linux && !redmux_portable && (amd64 || arm64 || riscv64 || loong64 || ppc64le)

package mux

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redmux/redmux/internal/redisproc/redistest"
	"github.com/redmux/redmux/mux/internal/poll"
)

func init() {
	uringArrived = func(set readySet) (bool, bool) {
		s, ok := set.(*uringSet)
		if !ok {
			return false, false
		}
		return peekRecv(s.r), true
	}
}

// peekRecv reports whether a receive's completion with data waits in the
// completion queue, unread (the kernel posted it; nobody reaped it yet).
func peekRecv(r *poll.Ring) bool {
	found := false
	r.Peek(func(ud uint64, res int32) {
		if uint8(ud) == uopRecv && res > 0 {
			found = true
		}
	})
	return found
}

// requireURing skips, loudly, where the kernel refuses io_uring (Linux <
// 5.11, a seccomp policy, the io_uring_disabled sysctl): the transport
// then falls back to epoll, which TestURingRefusedFallsBack covers. Under
// REDMUX_REQUIRE_IOURING it fails instead.
func requireURing(t *testing.T) {
	t.Helper()
	if err := uringRefused(); err != nil {
		if uringRequired() {
			t.Fatalf("io_uring refused on this machine (%v), and %s is set", err, envRequireURing)
		}
		t.Skipf("SKIPPED: io_uring refused on this machine (%v): the io_uring transport is not tested here", err)
	}
}

// TestURingTransport: a client that asks for io_uring runs on it and
// says so; lock operations from one caller are answered by every node,
// with two io_uring_enter per call: one submits the call's sends and
// waits for all five replies, one (when the caller gives the reader token
// back) submits the receives re-armed after those replies, so the
// connections are read while the caller is away. Between 1.5 and 2.5 on
// average: stragglers that complete between the collection and the wait
// can cost a third. A client that names epoll runs epoll.
func TestURingTransport(t *testing.T) {
	requireURing(t)
	addrs := startChild(t, 5)
	if c := newTestClient(t, addrs, func(cfg *Config) { cfg.Transport = TransportEpoll }); testTransport == TransportEpoll && c.Transport() != "epoll" {
		t.Fatalf("default transport %q, want epoll", c.Transport())
	}
	// A long direct budget: the lone caller never parks, whatever the
	// machine's load, so the count is the transport's, not the scheduler's.
	c := newTestClient(t, addrs, func(cfg *Config) {
		cfg.Transport, cfg.Conns, cfg.DirectWait, cfg.Timeout = TransportIOURing, 1, time.Second, 2*time.Second
	})
	if c.Transport() != "io_uring" {
		t.Fatalf("Transport() = %q, want io_uring", c.Transport())
	}
	w := newLockWork(c)
	ctx := context.Background()
	for k := 0; k < 20; k++ {
		w.op(ctx)
	}
	const ops = 500
	before := uringEnters()
	for k := 0; k < ops; k++ {
		w.op(ctx)
	}
	enters := uringEnters() - before
	if w.fails != 0 {
		t.Fatalf("%d failed calls", w.fails)
	}
	perCall := float64(enters) / (2 * ops)
	t.Logf("%.2f io_uring_enter per call (%d calls)", perCall, 2*ops)
	if perCall < 1.5 || perCall > 2.5 {
		t.Fatalf("%.2f io_uring_enter per call, want about 2", perCall)
	}
}

// TestAutoTransport: a client that names no transport (TransportAuto,
// the default outside this package's tests) runs epoll with the lone
// caller's 1ms direct wait and says "epoll (auto)", also where io_uring
// is allowed; TransportEpoll and a negative DirectWait opt out (epoll
// without a direct wait, as before issue 35), TransportIOURing opts in
// (epoll, saying why, where the ring is refused).
func TestAutoTransport(t *testing.T) {
	requireURing(t)
	saved := testTransport
	testTransport = TransportAuto // the default as users get it
	t.Cleanup(func() { testTransport = saved })
	addrs := startChild(t, 3)
	direct := func(c *Client) time.Duration { return time.Duration(c.drv.(*tokenDriver).direct) }
	check := func(c *Client, transport string, budget time.Duration) {
		t.Helper()
		if got := c.Transport(); !strings.HasPrefix(got, transport) {
			t.Fatalf("Transport() = %q, want %q", got, transport)
		}
		if got := direct(c); got != budget {
			t.Fatalf("%s: direct wait %v, want %v", c.Transport(), got, budget)
		}
		w := newLockWork(c)
		for k := 0; k < 10; k++ {
			w.op(context.Background())
		}
		if w.fails != 0 {
			t.Fatalf("%s: %d failed calls", c.Transport(), w.fails)
		}
	}
	check(newTestClient(t, addrs, nil), "epoll (auto)", DefaultDirectWait)
	if _, ok := newTestClient(t, addrs, nil).drv.(*tokenDriver).set.(*epollSet); !ok {
		t.Fatal("TransportAuto: not on the epoll set")
	}
	check(newTestClient(t, addrs, func(cfg *Config) { cfg.DirectWait = 300 * time.Microsecond }), "epoll (auto)", 300*time.Microsecond)
	check(newTestClient(t, addrs, func(cfg *Config) { cfg.DirectWait = -1 }), "epoll (auto)", 0)
	check(newTestClient(t, addrs, func(cfg *Config) { cfg.Transport = TransportEpoll }), "epoll", 0)
	if c := newTestClient(t, addrs, func(cfg *Config) { cfg.Transport = TransportEpoll }); c.Transport() != "epoll" {
		t.Fatalf("Transport() = %q, want epoll", c.Transport())
	}
	check(newTestClient(t, addrs, func(cfg *Config) { cfg.Transport = TransportIOURing }), "io_uring", DefaultDirectWait)
	if c := newTestClient(t, addrs, func(cfg *Config) { cfg.Transport = TransportIOURing }); c.Transport() != "io_uring" {
		t.Fatalf("Transport() = %q, want io_uring", c.Transport())
	}
	check(newTestClient(t, addrs, func(cfg *Config) { cfg.Transport, cfg.DirectWait = TransportIOURing, -1 }), "io_uring", 0)

	savedSetup := uringSetup
	uringSetup = func(uint32) (*poll.Ring, error) { return nil, errors.New("io_uring_setup: operation not permitted") }
	t.Cleanup(func() { uringSetup = savedSetup })
	check(newTestClient(t, addrs, nil), "epoll (auto)", DefaultDirectWait)
	check(newTestClient(t, addrs, func(cfg *Config) { cfg.Transport = TransportIOURing }), "epoll (io_uring refused: ", 0)
}

// TestURingRefusedFallsBack: where the ring cannot be set up, a client
// that asked for io_uring runs on epoll, says why, and works.
func TestURingRefusedFallsBack(t *testing.T) {
	saved := uringSetup
	uringSetup = func(uint32) (*poll.Ring, error) { return nil, errors.New("io_uring_setup: operation not permitted") }
	t.Cleanup(func() { uringSetup = saved })
	c := newTestClient(t, startChild(t, 3), func(cfg *Config) { cfg.Transport = TransportIOURing })
	if got := c.Transport(); !strings.HasPrefix(got, "epoll (io_uring refused: ") || !strings.Contains(got, "not permitted") {
		t.Fatalf("Transport() = %q", got)
	}
	w := newLockWork(c)
	for k := 0; k < 10; k++ {
		w.op(context.Background())
	}
	if w.fails != 0 {
		t.Fatalf("%d failed calls on the fallback", w.fails)
	}
}

// TestTransportConfig: an unknown Transport is a config error; the names
// are the ones the bench's -transport takes.
func TestTransportConfig(t *testing.T) {
	if _, err := New(Config{Addrs: []string{"127.0.0.1:1"}, Transport: TransportIOURing + 1}); !errors.Is(err, ErrConfig) {
		t.Fatalf("unknown transport: %v", err)
	}
	if TransportEpoll.String() != "epoll" || TransportIOURing.String() != "io_uring" {
		t.Fatal(TransportEpoll.String(), TransportIOURing.String())
	}
}

// TestURingWriteThroughClose: Close does not wait for callers inside Do.
// A writer that Close finds inside write (so the connection's close is
// left to it) and that writes after the ring is gone gets an error, not
// a fault: the ring was unmapped under such a write once (SIGSEGV in
// queue), found by review.
func TestURingWriteThroughClose(t *testing.T) {
	requireURing(t)
	c := newTestClient(t, startChild(t, 1), func(cfg *Config) { cfg.Transport, cfg.Conns = TransportIOURing, 1 })
	cn := c.conns[0]
	cn.mu.Lock()
	l, ok := cn.link.(*uringLink)
	cn.inWrite = true // as if a writer were inside write, mu released
	cn.mu.Unlock()
	if !ok {
		t.Fatalf("link %T", cn.link)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	cn.mu.Lock()
	deferred := cn.deferred == link(l)
	cn.mu.Unlock()
	if !deferred {
		t.Fatal("Close closed the link under its writer")
	}
	if n, err := l.write([]byte("*1\r\n$4\r\nPING\r\n")); err == nil || n != 0 {
		t.Fatalf("write after the ring closed: %d, %v", n, err)
	}
	l.close() // what the writer does next: the descriptor closes without the ring
	l.mu.Lock()
	fd := l.fd
	l.mu.Unlock()
	if fd != -1 {
		t.Fatalf("descriptor %d left open", fd)
	}
}

// TestURingLargeBatch: a batch far larger than a send buffer goes out in
// sends of up to uringSendBuf, not 64 KiB pieces (each full buffer is a
// short write and a round trip through the token holder: at 64 KiB a 6 MB
// batch per node took 1.8x epoll's time), and once the links are idle
// their send buffers are back to at most uringSendKeep.
func TestURingLargeBatch(t *testing.T) {
	requireURing(t)
	srv := redistest.StartN(t, 2, redistest.Options{})
	c := newTestClient(t, redistest.Addrs(srv), func(cfg *Config) {
		cfg.Transport, cfg.Conns = TransportIOURing, 1
	})
	before := shortWrites.Load()
	perNode := testLargeBatch(t, c)
	short := shortWrites.Load() - before
	// A full buffer is one short write: with 1 MiB buffers about
	// perNode/1 MiB per node, four times that with slack (64 KiB pieces
	// made 16 times more).
	limit := int64(c.N()) * (4*int64(perNode>>20) + 4)
	t.Logf("%d short writes for %d bytes per node (limit %d)", short, perNode, limit)
	if short > limit {
		t.Fatalf("%d short writes for %d bytes per node, want at most %d", short, perNode, limit)
	}
	s := c.drv.(*tokenDriver).set.(*uringSet)
	big := func() (n int) {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, l := range s.links {
			if l == nil {
				continue
			}
			l.mu.Lock()
			if cap(l.sbuf) > uringSendKeep || cap(l.nbuf) > uringSendKeep {
				n++
			}
			l.mu.Unlock()
		}
		return n
	}
	// The last send's completion may be read after the replies: bounded.
	for end := time.Now().Add(10 * time.Second); big() > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%d links keep a send buffer over %d bytes after the batch", big(), uringSendKeep)
		}
	}
}
