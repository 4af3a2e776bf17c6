// Package hdrtest makes histograms of random latencies for the tests of
// bench and its internal packages.
package hdrtest

import (
	"math"
	"math/rand/v2"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/redmux/redmux/bench/load"
)

// RandomHist returns a histogram (load.NewHistogram) of n values drawn
// log-uniformly from 1 µs to 10 s with r, each also recorded in all when
// all is not nil.
func RandomHist(r *rand.Rand, n int, all *hdr.Histogram) *hdr.Histogram {
	h := load.NewHistogram()
	for i := 0; i < n; i++ {
		v := time.Duration(float64(time.Microsecond) * math.Pow(10, r.Float64()*7))
		load.Record(h, v)
		if all != nil {
			load.Record(all, v)
		}
	}
	return h
}
