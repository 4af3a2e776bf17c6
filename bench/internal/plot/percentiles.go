package plot

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/redmux/redmux/bench/internal/format"
	"github.com/redmux/redmux/bench/load"
)

// Series is one line of a percentile plot.
type Series struct {
	Name  string
	Hist  *hdr.Histogram // nanoseconds
	Color string         // "" = Color(Name, its index)
	Dash  string         // SVG stroke-dasharray, "" = solid
	// Warn, when set, is drawn in red under the series' name (e.g.
	// "SATURATED": an open-loop run that did not keep up with its rate).
	Warn string
}

// WritePercentiles draws latency (log y) against percentile (x on a log
// scale of 1/(1-p), so 90%, 99%, 99.9%, ... are equally spaced), one line
// per series, in the style of HdrHistogram's plotter, as an SVG document.
func WritePercentiles(w io.Writer, title, subtitle string, series []Series) error {
	const (
		W, H                  = 860, 520
		left, right, top, bot = 80, 190, 62, 70
	)
	pw, ph := float64(W-left-right), float64(H-top-bot)

	// Axis ranges.
	maxCount := int64(0)
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range series {
		if s.Hist.TotalCount() == 0 {
			continue
		}
		maxCount = max(maxCount, s.Hist.TotalCount())
		lo = math.Min(lo, float64(s.Hist.Min()))
		hi = math.Max(hi, float64(s.Hist.Max()))
	}
	xMax := 2.0
	if maxCount > 0 {
		xMax = math.Min(6, math.Max(2, math.Ceil(math.Log10(float64(maxCount)))))
	}
	if math.IsInf(lo, 1) {
		lo, hi = 1e3, 1e6
	}
	lo = math.Max(lo, 1e3)
	yLo := math.Floor(math.Log10(lo))
	yHi := math.Ceil(math.Log10(math.Max(hi, lo*1.01)))
	if yHi-yLo < 1 {
		yHi = yLo + 1
	}
	px := func(x float64) float64 { return float64(left) + x/xMax*pw }
	py := func(ns float64) float64 {
		v := math.Log10(math.Max(ns, 1))
		return float64(top) + ph - (v-yLo)/(yHi-yLo)*ph
	}

	var b strings.Builder
	svgOpen(&b, W, H, left, title, subtitle)

	// Grid and y labels (decades, with 2x and 5x minor lines).
	for d := yLo; d <= yHi; d++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, d)
			if math.Log10(v) > yHi+1e-9 {
				break
			}
			y := py(v)
			if m == 1 {
				fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#cccccc"/>`+"\n", left, y, px(xMax), y)
				fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", left-8, y+4, durLabel(v))
			} else {
				fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eeeeee"/>`+"\n", left, y, px(xMax), y)
				fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" font-size="10" fill="#888">%s</text>`+"\n", left-8, y+3, durLabel(v))
			}
		}
	}
	// x grid and labels.
	for x := 0.0; x <= xMax+1e-9; x++ {
		X := px(x)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="#cccccc"/>`+"\n", X, top, X, float64(top)+ph)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", X, float64(top)+ph+18, pctLabel(x))
	}
	// Axes and labels.
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%.1f" fill="none" stroke="#333"/>`+"\n", left, top, pw, ph)
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">percentile (log scale of 1/(1-p))</text>`+"\n", float64(left)+pw/2, H-22)
	fmt.Fprintf(&b, `<text transform="translate(20 %.1f) rotate(-90)" text-anchor="middle">latency (log scale)</text>`+"\n", float64(top)+ph/2)

	// Lines; the legend packs tighter when there are many.
	const steps = 240
	spacing := 40.0
	if len(series) > 9 {
		spacing = math.Max(24, float64(H-top-bot)/float64(len(series)))
	}
	for i, s := range series {
		color := s.Color
		if color == "" {
			color = Color(s.Name, i)
		}
		dash := ""
		if s.Dash != "" {
			dash = ` stroke-dasharray="` + s.Dash + `"`
		}
		ly := float64(top) + 18 + float64(i)*spacing
		lx := float64(W-right) + 16
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="3"%s/>`+"\n", lx, ly, lx+26, ly, color, dash)
		h := s.Hist
		if !legendText(&b, s, lx+32, ly, float64(W)-(lx+32)-4) {
			continue
		}
		// The last meaningful percentile is 1 - 1/count; beyond it the line
		// stays at max.
		xEnd := math.Min(xMax, math.Log10(float64(h.TotalCount())))
		ps := make([]float64, steps+1)
		for k := range ps {
			ps[k] = 100 * (1 - math.Pow(10, -xEnd*float64(k)/steps))
		}
		vals := load.ValuesAtPercentiles(h, ps)
		var pts []string
		for k, v := range vals {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(xEnd*float64(k)/steps), py(float64(v))))
		}
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(xEnd), py(float64(h.Max()))), fmt.Sprintf("%.1f,%.1f", px(xMax), py(float64(h.Max()))))
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2"%s stroke-linejoin="round" points="%s"/>`+"\n", color, dash, strings.Join(pts, " "))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// legendText writes a series' legend text at x (its line ends left of x),
// ly its line's height: the name, its p50 and p99, and its warning, each
// fitted to avail pixels (a long name or warning would run past the
// image's right edge). It reports whether the series has data to draw.
func legendText(b *strings.Builder, s Series, x, ly, avail float64) bool {
	name, size := fitLegend(s.Name, avail, 12, boldWidth)
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-weight="bold"%s>%s</text>`+"\n", x, ly+4, size, html.EscapeString(name))
	h := s.Hist
	if h.TotalCount() == 0 {
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="10" fill="#555">no data</text>`+"\n", x, ly+18)
		return false
	}
	pv := load.ValuesAtPercentiles(h, []float64{50, 99})
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="10" fill="#555">p50 %s  p99 %s</text>`+"\n", x, ly+16,
		format.Us(us(pv[0])), format.Us(us(pv[1])))
	if s.Warn != "" {
		warn, size := fitLegend(s.Warn, avail, 10, boldWidth)
		if size == "" {
			size = ` font-size="10"`
		}
		fmt.Fprintf(b, `<text class="warn" x="%.1f" y="%.1f"%s font-weight="bold" fill="#d62728">%s</text>`+"\n", x, ly+28, size, html.EscapeString(warn))
	}
	return true
}

// pctLabel is the percentile axis label at x, the log10 of 1/(1-p)
// ("0%", "90%", "99.9%").
func pctLabel(x float64) string {
	if x == 0 {
		return "0%"
	}
	p := 100 * (1 - math.Pow(10, -x))
	s := fmt.Sprintf("%.*f", max(int(x)-1, 0), p)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s + "%"
}

// us is ns nanoseconds in microseconds.
func us(ns int64) float64 { return float64(ns) / 1e3 }
