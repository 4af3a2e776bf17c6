//go:build linux

package poll

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

var one = [8]byte{1}

// testEpoller returns an Epoll watching a new eventfd tagged tag; both
// are closed when the test ends.
func testEpoller(t *testing.T, tag int32) (*Epoll, int) {
	t.Helper()
	p, err := NewEpoll(4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Close(efd) })
	if err := p.Add(efd, tag, unix.EPOLLIN); err != nil {
		t.Fatal(err)
	}
	return p, efd
}

// TestEpollerWaits: WaitFor and Park report what is ready, return 0 events
// and no error when nothing is (whatever the timeout, a due one included:
// a negative timeout once broke every connection); a direct wait leaves
// the outer set disarmed, so events do not reach the runtime's netpoller
// while a leader waits directly, and a park that had to wait leaves it
// armed, so parks in a row cost no epoll_ctl.
func TestEpollerWaits(t *testing.T) {
	p, efd := testEpoller(t, 7)
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
	waitFor := func(d time.Duration) func() ([]unix.EpollEvent, error) {
		return func() ([]unix.EpollEvent, error) { return p.WaitFor(int64(d)) }
	}
	park := func(d time.Duration) func() ([]unix.EpollEvent, error) {
		return func() ([]unix.EpollEvent, error) { return p.Park(time.Now().Add(d)) }
	}
	tests := []struct {
		name      string
		ready     bool
		wait      func() ([]unix.EpollEvent, error)
		armedThen bool
	}{
		{"waitFor negative", false, waitFor(-time.Millisecond), false},
		{"waitFor zero", false, waitFor(0), false},
		{"waitFor 1ms", false, waitFor(time.Millisecond), false},
		{"waitFor ready", true, waitFor(time.Second), false},
		{"park ready, disarmed", true, park(time.Second), false},
		{"park past deadline", false, park(-time.Millisecond), true},
		{"park 1ms", false, park(time.Millisecond), true},
		{"park ready, armed", true, park(time.Second), true},
		{"waitFor zero, armed (a due sweep)", false, waitFor(0), true},
		{"waitFor 1ms after parks", false, waitFor(time.Millisecond), false},
		{"park again", false, park(time.Millisecond), true},
		{"waitFor ready after a park", true, waitFor(time.Second), false},
	}
	for _, tt := range tests {
		if tt.ready {
			signal()
		}
		evs, err := tt.wait()
		n := len(evs)
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
		if n == 1 && evs[0].Fd != 7 {
			t.Fatalf("%s: event tagged %d, want 7", tt.name, evs[0].Fd)
		}
		drain()
		signal()
		if got := outerArmed(); got != tt.armedThen {
			t.Fatalf("%s: outer set armed %v after the wait, want %v", tt.name, got, tt.armedThen)
		}
		drain()
	}
}

// TestEpollerParkWakes: a goroutine parked in Park is woken by an event
// that arrives after it parked (the armed outer set passes it on).
func TestEpollerParkWakes(t *testing.T) {
	p, efd := testEpoller(t, 3)
	for i := 0; i < 20; i++ {
		got := make(chan int, 1)
		go func() {
			evs, err := p.Park(time.Now().Add(10 * time.Second))
			n := len(evs)
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
