package report

import (
	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/redmux/redmux/bench/load"
)

// At returns the value of percentile p from l.Percentiles, or from the
// fixed fields, and whether it is known.
func (l Latency) At(p float64) (float64, bool) {
	for _, x := range l.Percentiles {
		if x.P == p {
			return x.Us, true
		}
	}
	switch p {
	case 50:
		return l.P50Us, true
	case 90:
		return l.P90Us, true
	case 99:
		return l.P99Us, true
	case 99.9:
		return l.P999Us, true
	case 99.99:
		return l.P9999Us, true
	case 100:
		return l.MaxUs, true
	}
	return 0, false
}

func us(ns int64) float64 { return float64(ns) / 1e3 }

// Summarize returns the percentiles of h (nanosecond values) in microseconds,
// with the fixed fields and, when pcts is not empty, those percentiles in
// Percentiles. An empty histogram gives a zero Latency.
func Summarize(h *hdr.Histogram, pcts ...float64) Latency {
	if h.TotalCount() == 0 {
		return Latency{}
	}
	fixed := []float64{50, 90, 99, 99.9, 99.99}
	v := load.ValuesAtPercentiles(h, append(fixed, pcts...))
	l := Latency{
		Count:   h.TotalCount(),
		MinUs:   us(h.Min()),
		MeanUs:  h.Mean() / 1e3,
		P50Us:   us(v[0]),
		P90Us:   us(v[1]),
		P99Us:   us(v[2]),
		P999Us:  us(v[3]),
		P9999Us: us(v[4]),
		MaxUs:   us(h.Max()),
	}
	for i, p := range pcts {
		l.Percentiles = append(l.Percentiles, Percentile{P: p, Us: us(v[len(fixed)+i])})
	}
	return l
}

// DefaultPercentiles are the percentiles of reports without -percentiles.
var DefaultPercentiles = []float64{50, 90, 99, 99.9, 99.99}

// SaturationShare is the saturation threshold of an open-loop run: the run
// is saturated when the achieved rate is below this share of the target.
const SaturationShare = 0.97
