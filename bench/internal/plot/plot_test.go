package plot

import (
	"encoding/xml"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/redmux/redmux/bench/load"
)

// The byte-for-byte outputs are pinned by bench's golden SVGs
// (bench/testdata/golden/*.svg); these check the helpers on their own.

func TestColor(t *testing.T) {
	if Color("mux", 3) != "#2ca02c" || Color("seq", 0) != "#d62728" || Color("fanout", 1) != "#1f77b4" {
		t.Error("a strategy's colour is not its own")
	}
	if Color("other", 5) != Spare(5) || Spare(1) != Spare(1+len(spare)) {
		t.Error("spare colours do not cycle")
	}
}

func TestLabels(t *testing.T) {
	for x, want := range map[float64]string{0: "0%", 1: "90%", 2: "99%", 3: "99.9%", 5: "99.999%"} {
		if got := pctLabel(x); got != want {
			t.Errorf("pctLabel(%v) = %q, want %q", x, got, want)
		}
	}
	for ns, want := range map[float64]string{1e3: "1us", 5e5: "500us", 2e6: "2ms", 1e9: "1s", 2e10: "20s"} {
		if got := durLabel(ns); got != want {
			t.Errorf("durLabel(%v) = %q, want %q", ns, got, want)
		}
	}
}

func TestSplitHalfAndFitFont(t *testing.T) {
	if got := splitHalf("aa; bbbb; cc; d"); len(got) != 2 || got[0] != "aa; bbbb;" || got[1] != "cc; d" {
		t.Errorf("splitHalf: %q", got)
	}
	if got := splitHalf("no separator"); len(got) != 1 {
		t.Errorf("splitHalf without a \"; \": %q", got)
	}
	if fitFont("short", 100, 12, 6, CharWidth) != 12 {
		t.Error("a text that fits keeps its size")
	}
	if got := fitFont(strings.Repeat("x", 1000), 100, 12, 6, CharWidth); got != 6 {
		t.Errorf("a text far too long gets the floor, got %v", got)
	}
}

func TestLogAxis(t *testing.T) {
	a, b := logAxis(300, 40000)
	if lo, hi := niceFloor(300), niceCeil(40000*1.02); a != math.Log10(lo) || b != math.Log10(hi) || lo != 200 || hi != 50000 {
		t.Errorf("logAxis(300, 40000) = %v, %v", a, b)
	}
	if got := logTicks(math.Log10(200), math.Log10(5000)); len(got) != 5 || got[0] != 200 || got[4] != 5000 {
		t.Errorf("logTicks 200..5000: %v", got)
	}
}

// Both plots are well-formed XML, with no series or steps too.
func TestEmptyPlotsAreWellFormed(t *testing.T) {
	var b strings.Builder
	h := load.NewHistogram()
	if err := WritePercentiles(&b, "t <&>", "s", []Series{{Name: "mux", Hist: h}}); err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal([]byte(b.String()), new(struct{})); err != nil {
		t.Errorf("percentiles: %v", err)
	}
	b.Reset()
	if err := WriteSweep(&b, "t", "s", Sweep{MaxFailedShare: 0.01}); err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal([]byte(b.String()), new(struct{})); err != nil {
		t.Errorf("sweep: %v", err)
	}
}

// No text of the legend runs past the image's right edge: long series
// names and the saturation warning get a smaller font (measured with the
// same per-character widths the fitting uses, bold for bold text).
func TestLegendInsideWidth(t *testing.T) {
	h := load.NewHistogram()
	for v := int64(1000); v < 2000000; v += 997 {
		_ = h.RecordValue(v)
	}
	var b strings.Builder
	series := []Series{
		{Name: "fanout not acquired", Hist: h, Warn: "SATURATED (behind -rate)"},
		{Name: "a-strategy-with-a-very-long-name failed", Hist: h},
		{Name: "mux", Hist: h},
	}
	if err := WritePercentiles(&b, "t", "s", series); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(strings.NewReader(b.String()))
	width, texts := 0.0, 0
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		el, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		attr := map[string]string{}
		for _, a := range el.Attr {
			attr[a.Name.Local] = a.Value
		}
		if el.Name.Local == "svg" {
			width = parseF(t, attr["width"])
			continue
		}
		if el.Name.Local != "text" || attr["x"] == "" || attr["text-anchor"] != "" || attr["transform"] != "" {
			continue
		}
		var content string
		if tok, err := dec.Token(); err == nil {
			if cd, ok := tok.(xml.CharData); ok {
				content = string(cd)
			}
		}
		size := 12.0
		if attr["font-size"] != "" {
			size = parseF(t, attr["font-size"])
		}
		w := CharWidth
		if attr["font-weight"] == "bold" {
			w = boldWidth
		}
		end := parseF(t, attr["x"]) + float64(len([]rune(content)))*w*size
		if end > width {
			t.Errorf("%q at x=%s, size %v ends at %.1f, past the width %v", content, attr["x"], size, end, width)
		}
		texts++
	}
	if texts < 6 {
		t.Fatalf("only %d texts looked at", texts)
	}
}

func parseF(t *testing.T, s string) float64 {
	t.Helper()
	var f float64
	if _, err := fmt.Sscan(s, &f); err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return f
}
