package report_test

import (
	"fmt"
	"time"

	"github.com/redmux/redmux/bench/internal/report"
	"github.com/redmux/redmux/bench/load"
)

func ExampleSummarize() {
	h := load.NewHistogram()
	for i := 1; i <= 100; i++ {
		_ = h.RecordValue(int64(time.Duration(i) * time.Millisecond))
	}
	l := report.Summarize(h)
	fmt.Printf("count %d, p50 %.0fus, p99 %.0fus, max %.0fus\n", l.Count, l.P50Us, l.P99Us, l.MaxUs)
	// Output:
	// count 100, p50 50004us, p99 99025us, max 100008us
}
