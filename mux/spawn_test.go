package mux

import (
	"testing"
	"time"
)

// The net driver's background work (a TLS spill's flush, a writer resumed
// after a full socket) runs through spawn: close waits for it, and after
// close has begun spawn starts nothing, so when Client.Close returns no
// goroutine of the client remains (they used to be plain goroutines and
// timers that could outlive Close).
func TestNetDriverSpawnJoinsClose(t *testing.T) {
	d := &netDriver{live: map[*netLink]struct{}{}}
	release, ran := make(chan struct{}), make(chan struct{})
	if !d.spawn(func() { close(ran); <-release }) {
		t.Fatal("spawn refused before close")
	}
	<-ran
	done := make(chan struct{})
	go func() { d.close(); close(done) }()
	select {
	case <-done:
		t.Fatal("close returned while spawned work still ran")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("close did not return once the spawned work ended")
	}
	if d.spawn(func() { t.Error("ran after close") }) {
		t.Fatal("spawn started work after close")
	}
}
