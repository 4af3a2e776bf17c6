package redlock

import (
	"testing"
	"time"
)

// backoff doubles from base up to max and draws from [d/2, d].
func TestBackoffBounds(t *testing.T) {
	base, max := 10*time.Millisecond, 300*time.Millisecond
	for try := 1; try <= 80; try++ {
		d := max
		if try <= 6 {
			d = base << (try - 1) // 10, 20, 40, 80, 160, 320 -> capped at 300
			if d > max {
				d = max
			}
		}
		for _, r := range []uint64{0, 1, 12345, ^uint64(0), uint64(d / 2), uint64(d/2) + 1} {
			got := backoff(base, max, try, r)
			if got < d/2 || got > d {
				t.Fatalf("try %d r %d: %v outside [%v, %v]", try, r, got, d/2, d)
			}
		}
		if lo, hi := backoff(base, max, try, 0), backoff(base, max, try, uint64(d-d/2)); lo != d/2 || hi != d {
			t.Fatalf("try %d: range [%v, %v], want [%v, %v]", try, lo, hi, d/2, d)
		}
	}
	// a huge base never overflows into a negative or zero wait
	if got := backoff(time.Duration(1)<<61, time.Duration(1)<<62, 5, 7); got <= 0 {
		t.Fatalf("overflow: %v", got)
	}
}
