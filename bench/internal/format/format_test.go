package format

import "testing"

func TestUsNeverCarriesIntoTheNextUnit(t *testing.T) {
	for _, c := range []struct {
		us   float64
		want string
	}{
		{0, "0us"}, {999.4, "999us"}, {999.7, "1.00ms"}, {9_999.4, "10.00ms"}, {9_999.6, "10.0ms"},
		{999_940, "999.9ms"}, {999_960, "1.00s"}, {2_500_000, "2.50s"},
	} {
		if got := Us(c.us); got != c.want {
			t.Errorf("Us(%v) = %q, want %q", c.us, got, c.want)
		}
	}
}

func TestCount(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want string
	}{
		{0, "0"}, {999.4, "999"}, {9_999.4, "9999"}, {10_000, "10.0k"}, {12_345, "12.3k"}, {999_999, "1000.0k"}, {1e6, "1.00M"}, {2_345_678, "2.35M"},
	} {
		if got := Count(c.v); got != c.want {
			t.Errorf("Count(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}

func TestPercentile(t *testing.T) {
	for p, want := range map[float64]string{50: "p50", 99: "p99", 99.9: "p99.9", 99.99: "p99.99", 100: "p100"} {
		if got := Percentile(p); got != want {
			t.Errorf("Percentile(%v) = %q, want %q", p, got, want)
		}
	}
}
