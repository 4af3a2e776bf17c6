//go:build linux

package mux

import (
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestEpollerWaits: waitFor and park report what is ready, return 0 events
// and no error when nothing is (whatever the timeout, a due one included:
// a negative timeout once broke every connection), and park leaves the
// outer set disarmed, so a later event does not reach the runtime's
// netpoller while a leader waits directly.
func TestEpollerWaits(t *testing.T) {
	p, err := newEpoller(4)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(efd)
	if err := p.add(efd, 7, unix.EPOLLIN); err != nil {
		t.Fatal(err)
	}
	signal := func() {
		if _, err := unix.Write(efd, one[:]); err != nil {
			t.Fatal(err)
		}
	}
	drain := func() {
		var b [8]byte
		_, _ = unix.Read(efd, b[:])
	}
	outerArmed := func() bool {
		var ev [1]unix.EpollEvent
		n, err := unix.EpollWait(p.outer, ev[:], 0)
		if err != nil {
			t.Fatal(err)
		}
		return n > 0
	}
	tests := []struct {
		name  string
		ready bool
		wait  func() (int, error)
	}{
		{"waitFor negative", false, func() (int, error) { return p.waitFor(-int64(time.Millisecond)) }},
		{"waitFor zero", false, func() (int, error) { return p.waitFor(0) }},
		{"waitFor 1ms", false, func() (int, error) { return p.waitFor(int64(time.Millisecond)) }},
		{"waitFor ready", true, func() (int, error) { return p.waitFor(int64(time.Second)) }},
		{"park past deadline", false, func() (int, error) { return p.park(mono() - int64(time.Millisecond)) }},
		{"park 1ms", false, func() (int, error) { return p.park(mono() + int64(time.Millisecond)) }},
		{"park ready", true, func() (int, error) { return p.park(mono() + int64(time.Second)) }},
	}
	for _, tt := range tests {
		if tt.ready {
			signal()
		}
		n, err := tt.wait()
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		want := 0
		if tt.ready {
			want = 1
		}
		if n != want {
			t.Fatalf("%s: %d events, want %d", tt.name, n, want)
		}
		if n == 1 && p.events[0].Fd != 7 {
			t.Fatalf("%s: event tagged %d, want 7", tt.name, p.events[0].Fd)
		}
		drain()
		// After any wait the outer set is disarmed: an event now is not
		// passed on.
		signal()
		if outerArmed() {
			t.Fatalf("%s: the outer set passed an event on after the wait", tt.name)
		}
		drain()
	}
}

// TestEpollerParkWakes: a goroutine parked in park is woken by an event
// that arrives after it parked (the armed outer set passes it on).
func TestEpollerParkWakes(t *testing.T) {
	p, err := newEpoller(4)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(efd)
	if err := p.add(efd, 3, unix.EPOLLIN); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		got := make(chan int, 1)
		go func() {
			n, err := p.park(mono() + int64(10*time.Second))
			if err != nil {
				n = -1
			}
			got <- n
		}()
		time.Sleep(time.Millisecond) // usually parked by now; either order must work
		if _, err := unix.Write(efd, one[:]); err != nil {
			t.Fatal(err)
		}
		select {
		case n := <-got:
			if n != 1 {
				t.Fatalf("round %d: park returned %d events", i, n)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: park was not woken by the event", i)
		}
		var b [8]byte
		_, _ = unix.Read(efd, b[:])
	}
}

// TestDirectWaitConfig: DirectWait's default follows GOMAXPROCS at New,
// negative turns it off, a set value is kept.
func TestDirectWaitConfig(t *testing.T) {
	procs := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(procs)
	tests := []struct {
		procs int
		set   time.Duration
		want  time.Duration
	}{
		{2, 0, DefaultDirectWait},
		{1, 0, 0},
		{2, -1, 0},
		{1, 300 * time.Microsecond, 300 * time.Microsecond},
		{4, 5 * time.Millisecond, 5 * time.Millisecond},
	}
	for _, tt := range tests {
		runtime.GOMAXPROCS(tt.procs)
		r, err := resolve(Config{Addrs: []string{"127.0.0.1:1"}, DirectWait: tt.set})
		if err != nil {
			t.Fatal(err)
		}
		if r.DirectWait != tt.want {
			t.Errorf("GOMAXPROCS %d, DirectWait %v: resolved %v, want %v", tt.procs, tt.set, r.DirectWait, tt.want)
		}
	}
}
