//go:build linux

package mux

import (
	"runtime"
	"testing"
	"time"
)

// TestDirectWaitConfig: DirectWait is off unless set, negative is off, a
// set value is kept, except with GOMAXPROCS 1.
func TestDirectWaitConfig(t *testing.T) {
	procs := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(procs)
	tests := []struct {
		procs int
		set   time.Duration
		want  time.Duration
	}{
		{2, 0, 0},
		{1, 0, 0},
		{2, -1, 0},
		{2, time.Millisecond, time.Millisecond},
		{1, time.Millisecond, 0},
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
