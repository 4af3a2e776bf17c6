package bench

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/redmux/redmux/bench/internal/report"
	"github.com/redmux/redmux/bench/load"
	"github.com/stretchr/testify/require"
)

// Issue 36 item 5: counts that add up. An operation whose release failed
// after it acquired is in failed only: acquired and released + not
// acquired + failed = ops, in summary.json and in both tables.
func TestOutcomeCountsAddUp(t *testing.T) {
	start := time.Now()
	var h load.Hists
	for i := range h {
		h[i] = load.NewHistogram()
	}
	// 100 operations: 80 acquired (5 of them then failed at release), 10
	// refused, 10 failed at acquire.
	r := &load.Result{Start: start, End: start.Add(time.Second), Hists: h, Ops: 100, Acquired: 80, NotAcquired: 10,
		Failed: 15, ReleaseFailed: 5, Errors: map[string]int64{"no_quorum": 10, "release_timeout": 5}}
	s := strategyResult("mux", load.RunConfig{Workers: 1, Duration: time.Second}, r)
	require.EqualValues(t, 75, s.AcquiredReleased)
	require.Equal(t, s.Ops, s.AcquiredReleased+s.NotAcquired+s.Failed)
	rep := &report.Report{Strategies: []*report.StrategyResult{s}}
	var md bytes.Buffer
	report.WriteOutcomes(&md, rep)
	require.Contains(t, md.String(), "| mux | 100 | 1.00 | 75 | 10 | 15 | 5 |", md.String())
	var tb bytes.Buffer
	report.WriteTable(&tb, rep)
	require.Contains(t, tb.String(), "acq+rel ok")
	require.True(t, strings.Contains(tb.String(), " 75 ") && strings.Contains(tb.String(), " 15 "), tb.String())
}
