package checker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestCheck(t *testing.T) {
	base := time.Now()
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	tests := []struct {
		name       string
		iv         [][3]int // holder, start ms, end ms (resource "a")
		violations int
		maxOverlap time.Duration
	}{
		{"empty", nil, 0, 0},
		{"disjoint", [][3]int{{1, 0, 10}, {2, 10, 20}, {3, 25, 30}}, 0, 0},
		{"out of order disjoint", [][3]int{{3, 25, 30}, {1, 0, 10}, {2, 10, 20}}, 0, 0},
		{"overlap", [][3]int{{1, 0, 10}, {2, 7, 20}}, 1, 3 * time.Millisecond},
		{"nested", [][3]int{{1, 0, 100}, {2, 10, 20}, {3, 30, 40}}, 2, 90 * time.Millisecond},
		{"overlap with an earlier long one", [][3]int{{1, 0, 50}, {2, 10, 12}, {3, 45, 60}}, 2, 40 * time.Millisecond},
		{"empty interval never overlaps", [][3]int{{1, 0, 10}, {2, 5, 5}, {3, 8, 3}}, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRecorder()
			for _, x := range tc.iv {
				r.Record("a", x[0], at(x[1]), at(x[2]))
			}
			r.Record("b", 9, at(0), at(1000)) // other resources never conflict
			rep := r.Check()
			require.Equal(t, tc.violations, rep.Violations, rep.String())
			require.Equal(t, tc.maxOverlap, rep.MaxOverlap)
			require.Equal(t, len(tc.iv)+1, rep.Intervals)
			require.Equal(t, len(tc.iv)+1, r.Len())
			if tc.violations > 0 {
				require.Contains(t, rep.String(), "violations")
				require.Equal(t, "a", rep.Samples[0].Later.Resource)
			}
		})
	}
}

func TestCheckSamplesBounded(t *testing.T) {
	r := NewRecorder()
	base := time.Now()
	for i := 0; i < 100; i++ {
		r.Record("x", i, base, base.Add(time.Second))
	}
	rep := r.Check()
	require.Equal(t, 99, rep.Violations)
	require.Len(t, rep.Samples, MaxSamples)
}
