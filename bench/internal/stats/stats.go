// Package stats decides whether a metric changed between two sets of
// runs, as redmux-bench compare reports it: benchstat's tests
// (golang.org/x/perf/benchmath) when both sides have repeated runs, a
// noise threshold always. Internal: its API is bench's, not users'.
package stats

import (
	"math"
	"sort"

	"golang.org/x/perf/benchmath"
)

// Options are how one metric is compared.
type Options struct {
	// Noise is the smallest relative change flagged; Alpha the test's
	// significance level; Test "utest" (Mann-Whitney U, centre the median)
	// or "ttest" (Welch's t, centre the mean).
	Noise, Alpha float64
	Test         string
	// HigherBetter: a rise is "better" (else "worse"). Floor is an
	// absolute difference always taken as noise.
	HigherBetter bool
	Floor        float64
}

// Result is one metric, old runs against new.
type Result struct {
	Old, New float64 // means over the runs (medians under the U test)
	// OldCV and NewCV are the coefficients of variation over each side's
	// runs (-1: one run, not measured).
	OldCV, NewCV float64
	Ratio        float64 // New / Old
	Noise        float64 // the relative change below which a difference is noise
	// P is the test's p-value (-1: not tested, a side has one run);
	// PNote is benchmath's warning when the runs are too few for the
	// test to reach Alpha.
	P     float64
	PNote string
	// Verdict is "~" (no significant change, or within the noise),
	// "better" or "worse" when both sides have repeated runs; NoTest when
	// a side has one run: no p-value exists, so no change is called
	// significant, better or worse.
	Verdict string
	// BeyondNoise (untested rows only) says the difference is larger than
	// the noise threshold: worth repeating the runs to test, not a verdict.
	BeyondNoise bool
}

// NoTest is the verdict of a metric with one run on a side.
const NoTest = "n=1: no significance"

// Compare compares one metric's runs (old and new are not empty): with at
// least two runs a side by benchstat's test, a change flagged when
// p < Alpha and larger than Noise. With one run on a side there is no
// test and the verdict is NoTest; BeyondNoise then says whether the
// difference is larger than Noise, widened to twice the spread of a side
// with repeated runs.
func Compare(old, new []float64, o Options) Result {
	r := Result{P: -1, Noise: o.Noise}
	r.Old, r.OldCV = meanCV(old)
	r.New, r.NewCV = meanCV(new)
	significant := true
	if len(old) >= 2 && len(new) >= 2 {
		th := benchmath.DefaultThresholds
		th.CompareAlpha = o.Alpha
		var a benchmath.Assumption = benchmath.AssumeNothing
		if o.Test == "ttest" {
			a = benchmath.AssumeNormal
		}
		res := a.Compare(benchmath.NewSample(old, &th), benchmath.NewSample(new, &th))
		r.P = res.P
		for _, w := range res.Warnings {
			r.PNote = w.Error()
		}
		significant = res.P < o.Alpha
		// benchstat's centre for the U test is the median.
		if o.Test == "utest" {
			r.Old, r.New = median(old), median(new)
		}
	} else {
		// No test: a side with repeated runs still widens the noise to
		// twice its spread.
		r.Noise = math.Max(o.Noise, 2*math.Max(r.OldCV, r.NewCV))
	}
	switch {
	case math.Abs(r.New-r.Old) <= o.Floor:
		r.Ratio, r.Verdict = 1, "~"
		if r.Old != 0 {
			r.Ratio = r.New / r.Old
		}
	case r.Old == 0 && r.New == 0:
		r.Ratio, r.Verdict = 1, "~"
	case r.Old == 0:
		r.Ratio, r.Verdict = math.Inf(1), "~"
		if significant {
			r.Verdict = worseOrBetter(o.HigherBetter, true)
		}
	default:
		r.Ratio = r.New / r.Old
		r.Verdict = "~"
		if significant && math.Abs(r.Ratio-1) > r.Noise {
			r.Verdict = worseOrBetter(o.HigherBetter, r.Ratio > 1)
		}
	}
	if r.P < 0 {
		r.BeyondNoise = r.Verdict != "~"
		r.Verdict = NoTest
	}
	return r
}

// median of v (not modified).
func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func worseOrBetter(higherBetter, rose bool) string {
	if higherBetter == rose {
		return "better"
	}
	return "worse"
}

// meanCV returns the mean and the coefficient of variation (sample
// standard deviation over the mean; -1 with one value).
func meanCV(v []float64) (float64, float64) {
	var sum float64
	for _, x := range v {
		sum += x
	}
	mean := sum / float64(len(v))
	if len(v) < 2 {
		return mean, -1
	}
	var ss float64
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	sd := math.Sqrt(ss / float64(len(v)-1))
	if mean == 0 {
		return mean, 0
	}
	return mean, sd / math.Abs(mean)
}
