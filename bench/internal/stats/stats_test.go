package stats

import (
	"math"
	"testing"
)

func TestCompare(t *testing.T) {
	o := Options{Noise: 0.05, Alpha: 0.05, Test: "utest"}
	higher := o
	higher.HigherBetter = true
	floor := o
	floor.Floor = 0.5
	// Untested rows larger than the noise (a hint to repeat the runs).
	beyond := map[string]bool{"one run each, over the noise, lower is better": true,
		"one run each, over the noise, higher is better": true, "from zero": true}
	for _, c := range []struct {
		name     string
		old, new []float64
		o        Options
		verdict  string
		ratio, p float64 // p: -1 untested, else only checked against Alpha
	}{
		{"one run each, over the noise, lower is better", []float64{100}, []float64{120}, o, NoTest, 1.2, -1},
		{"one run each, over the noise, higher is better", []float64{100}, []float64{120}, higher, NoTest, 1.2, -1},
		{"one run each, within the noise", []float64{100}, []float64{104}, o, NoTest, 1.04, -1},
		{"a side's spread widens the noise", []float64{100}, []float64{100, 140}, o, NoTest, 1.2, -1},
		{"within the floor", []float64{0.1}, []float64{0.5}, floor, NoTest, 5, -1},
		{"both zero", []float64{0}, []float64{0}, o, NoTest, 1, -1},
		{"from zero", []float64{0}, []float64{3}, o, NoTest, math.Inf(1), -1},
		{"repeated runs, a clear change", []float64{100, 101, 99, 100, 102}, []float64{150, 151, 149, 152, 150}, o, "worse", 1.5, 0},
		{"repeated runs, overlapping", []float64{100, 130, 90, 120, 80}, []float64{110, 125, 95, 85, 120}, o, "~", 1.1, 1},
	} {
		r := Compare(c.old, c.new, c.o)
		if want := beyond[c.name]; r.BeyondNoise != want {
			t.Errorf("%s: beyond the noise %v, want %v", c.name, r.BeyondNoise, want)
		}
		if r.Verdict != c.verdict || math.Abs(r.Ratio-c.ratio) > 1e-9 && !(math.IsInf(c.ratio, 1) && math.IsInf(r.Ratio, 1)) {
			t.Errorf("%s: verdict %q ratio %v, want %q %v", c.name, r.Verdict, r.Ratio, c.verdict, c.ratio)
		}
		switch {
		case c.p == -1 && r.P != -1:
			t.Errorf("%s: tested (p %v) with a single run on a side", c.name, r.P)
		case c.p == 0 && !(r.P >= 0 && r.P < o.Alpha):
			t.Errorf("%s: p %v, want under %v", c.name, r.P, o.Alpha)
		case c.p == 1 && !(r.P >= o.Alpha):
			t.Errorf("%s: p %v, want at least %v", c.name, r.P, o.Alpha)
		}
	}
}

func TestMeanCVAndMedian(t *testing.T) {
	if m, cv := meanCV([]float64{5}); m != 5 || cv != -1 {
		t.Errorf("one value: %v %v", m, cv)
	}
	if m, cv := meanCV([]float64{1, 3}); m != 2 || math.Abs(cv-math.Sqrt2/2) > 1e-12 {
		t.Errorf("1, 3: %v %v", m, cv)
	}
	if got := median([]float64{3, 1, 2}); got != 2 {
		t.Errorf("median 3,1,2 = %v", got)
	}
	v := []float64{4, 1, 3, 2}
	if got := median(v); got != 2.5 || v[0] != 4 {
		t.Errorf("median 4,1,3,2 = %v (v %v: not modified)", got, v)
	}
}
