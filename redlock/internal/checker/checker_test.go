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
				require.Contains(t, rep.String(), "overlaps")
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

// Claims of one holding (an acquisition and its extensions) never conflict
// with each other, but each is checked against every other holding.
func TestCheckHoldings(t *testing.T) {
	base := time.Now()
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	type c struct {
		holding  int64
		from, to int
	}
	tests := []struct {
		name       string
		claims     []c
		violations int
		maxOverlap time.Duration
	}{
		{"extension continues its own holding", []c{{1, 0, 10}, {1, 8, 30}, {2, 30, 40}}, 0, 0},
		{"another holding in the gap before a late extension", []c{{1, 0, 10}, {2, 12, 20}, {1, 22, 40}}, 0, 0},
		{"extension claim overlaps the next holder", []c{{1, 0, 10}, {1, 8, 30}, {2, 25, 40}}, 1, 5 * time.Millisecond},
		{"late extension overlaps a holder in the gap", []c{{1, 0, 10}, {2, 12, 20}, {1, 15, 40}}, 1, 5 * time.Millisecond},
		{"own later claim does not hide another's end", []c{{1, 0, 100}, {2, 10, 50}, {1, 60, 70}, {3, 55, 58}}, 2, 90 * time.Millisecond},
		{"own latest claim does not hide another holding still valid", []c{{1, 0, 100}, {2, 10, 80}, {1, 60, 70}}, 2, 90 * time.Millisecond},
		{"second latest end of another holding", []c{{1, 0, 50}, {2, 0, 40}, {1, 45, 60}}, 1, 50 * time.Millisecond},
		{"after a failed extension the shorter claim is respected", []c{{1, 0, 5}, {1, 6, 9}, {2, 9, 20}}, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRecorder()
			for _, x := range tc.claims {
				r.Add(Interval{Resource: "a", Holder: int(x.holding), Holding: x.holding, Start: at(x.from), End: at(x.to)})
			}
			rep := r.Check()
			require.Equal(t, tc.violations, rep.Violations, rep.String())
			require.Equal(t, tc.maxOverlap, rep.MaxOverlap)
			require.Equal(t, tc.violations, rep.Total())
		})
	}
}

func TestContracts(t *testing.T) {
	r := NewRecorder()
	r.Broke(NoValidity, "x %d", 1)
	r.Broke(LateExtension, "y")
	r.Broke(LateExtension, "z")
	rep := r.Check()
	require.Equal(t, 1, rep.Contracts[NoValidity])
	require.Equal(t, 2, rep.Contracts[LateExtension])
	require.Equal(t, 3, rep.Broken())
	require.Equal(t, 3, rep.Total())
	require.Contains(t, rep.String(), "no-validity: x 1")
	require.Contains(t, rep.Summary(), "overlaps=0 no-validity=1 late-extension=2 failed-extend-too-long=0 bad-reply=0 keepalive-stale=0 keepalive-outlived=0 release-contract=0 stale-write=0 token-regression=0 extend-too-long=0 keepalive-end-report=0 key-expired-early=0 leftovers=0")
	rep.Leftovers = []string{"node 1 k pttl 1s"}
	require.Equal(t, 4, rep.Total())
}
