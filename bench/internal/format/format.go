// Package format renders bench's numbers the way every report shows them:
// latencies in microseconds with a unit that keeps them short, counts and
// rates with k and M, percentiles as "p99.9". The tables, the Markdown
// reports and the plots (bench/internal/plot) share it, so a figure reads
// the same wherever it appears. Internal: its API is bench's, not users'.
package format

import (
	"fmt"
	"strconv"
)

// Us renders a microsecond value with a unit that keeps it short.
func Us(v float64) string {
	switch {
	// Thresholds sit where rounding would carry into the next unit
	// (999.7us prints as 1.00ms, never 1000us).
	case v >= 999_950:
		return fmt.Sprintf("%.2fs", v/1e6)
	case v >= 9_999.5:
		return fmt.Sprintf("%.1fms", v/1e3)
	case v >= 999.5:
		return fmt.Sprintf("%.2fms", v/1e3)
	}
	return fmt.Sprintf("%.0fus", v)
}

// Count renders a count or a rate: whole below 10,000, then with one
// decimal and k, from a million with two decimals and M.
func Count(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

// Percentile renders a percentile as "p99.9".
func Percentile(p float64) string { return "p" + strconv.FormatFloat(p, 'f', -1, 64) }
