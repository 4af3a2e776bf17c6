package mux

import (
	"math/rand/v2"
	"testing"
)

// TestSlotRingFIFO pushes and pops at random against a plain slice, so
// the ring wraps and grows (16, 32, 64 ...) with its head at any
// position: every pop, front and at must give what the slice says.
func TestSlotRingFIFO(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var q slotRing
	var want []int32
	next := int32(0)
	for step := 0; step < 20000; step++ {
		if len(want) == 0 || rng.IntN(100) < 52 {
			q.push(slot{k: next})
			want = append(want, next)
			next++
		} else {
			if got := q.front().k; got != want[0] {
				t.Fatalf("step %d: front %d, want %d", step, got, want[0])
			}
			if got := q.pop().k; got != want[0] {
				t.Fatalf("step %d: pop %d, want %d", step, got, want[0])
			}
			want = want[1:]
		}
		if q.n != len(want) {
			t.Fatalf("step %d: n %d, want %d", step, q.n, len(want))
		}
		if len(want) > 0 {
			i := rng.IntN(len(want))
			if got := q.at(i).k; got != want[i] {
				t.Fatalf("step %d: at(%d) %d, want %d", step, i, got, want[i])
			}
		}
	}
	if len(q.s) < 64 {
		t.Fatalf("the ring never grew past %d slots: the test did not exercise growth", len(q.s))
	}
}
