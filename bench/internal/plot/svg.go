// Package plot draws bench's SVG plots: the percentile distributions of
// latency (percentiles.svg, percentiles-acquire.svg, merged.svg) and the
// sweep's latency against throughput (sweep.svg). It knows nothing of
// bench's reports: bench/internal/report turns a run, a merge or a sweep
// into the series drawn here. Internal: its API is bench's, not users'.
package plot

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
)

// colors are the strategies' colours (bench's strategy names); spare are
// for any other series.
var (
	colors = map[string]string{"seq": "#d62728", "fanout": "#1f77b4", "mux": "#2ca02c"}
	spare  = []string{"#9467bd", "#ff7f0e", "#8c564b", "#17becf"}
)

// Color is the colour of the strategy called name, else the i-th spare
// colour (Spare).
func Color(name string, i int) string {
	if c := colors[name]; c != "" {
		return c
	}
	return Spare(i)
}

// Spare is the i-th of the colours that are not a strategy's (they cycle).
func Spare(i int) string { return spare[i%len(spare)] }

// svgOpen starts a plot: the svg element, a white background, the title and
// its subtitle.
func svgOpen(b *strings.Builder, w, h, left int, title, sub string) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica,Arial,sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", w, h)
	// Nothing runs past the right edge: long lines get a smaller font,
	// and a subtitle too long even then is broken in two at a "; ".
	x := min(left, 12)
	avail := float64(w - x - 8)
	fmt.Fprintf(b, `<text x="%d" y="24" font-size="%.1f" font-weight="bold">%s</text>`+"\n", x, fitFont(title, avail, 16, 10, boldWidth), html.EscapeString(title))
	lines := []string{sub}
	if fitFont(sub, avail, 11, 9, CharWidth) < 9.5 {
		lines = splitHalf(sub)
	}
	for i, l := range lines {
		fmt.Fprintf(b, `<text x="%d" y="%d" font-size="%.1f" fill="#555">%s</text>`+"\n", x, 42+13*i, fitFont(l, avail, 11, 6, CharWidth), html.EscapeString(l))
	}
}

// Average glyph widths of Helvetica/Arial, as a share of the font size
// (wide enough for digits and capitals): CharWidth is what a text's width
// is estimated with when it is fitted to the plot (the tests estimate it
// the same way).
const (
	CharWidth = 0.56
	boldWidth = 0.61
)

// fitFont is the largest font size, at most size and at least floor,
// at which s spans no more than avail pixels.
func fitFont(s string, avail, size, floor, width float64) float64 {
	n := float64(len([]rune(s)))
	if n == 0 || n*width*size <= avail {
		return size
	}
	return max(floor, avail/(n*width))
}

// fitLegend fits s, drawn at size by default, into avail pixels: it
// returns the text to draw and a font-size attribute (with its leading
// space; "" when s fits at size). A text too long even at the smallest
// font (6) is cut, with an ellipsis.
func fitLegend(s string, avail, size, width float64) (string, string) {
	const floor = 6
	f := fitFont(s, avail, size, floor, width)
	if r := []rune(s); float64(len(r))*width*f > avail {
		keep := max(int(avail/(width*f))-1, 0)
		s = string(r[:min(keep, len(r))]) + "…"
	}
	if f == size {
		return s, ""
	}
	return s, ` font-size="` + sizeText(f) + `"`
}

// sizeText writes a font size: whole sizes as they are ("10"), others
// rounded down to a tenth, so the text still fits.
func sizeText(f float64) string {
	if f == math.Trunc(f) {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(math.Floor(f*10)/10, 'f', 1, 64)
}

// splitHalf breaks s in two at the "; " nearest its middle (s alone when
// it has none).
func splitHalf(s string) []string {
	best := -1
	for i := 0; i+2 <= len(s); i++ {
		if s[i:i+2] == "; " && (best < 0 || abs(i-len(s)/2) < abs(best-len(s)/2)) {
			best = i
		}
	}
	if best < 0 {
		return []string{s}
	}
	return []string{s[:best+1], s[best+2:]}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// durLabel is an axis label for ns nanoseconds ("2ms", "500us", "1s").
func durLabel(ns float64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%gs", ns/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%gms", ns/1e6)
	}
	return fmt.Sprintf("%gus", ns/1e3)
}
