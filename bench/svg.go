package bench

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

// plotSeries is one line of a percentile plot.
type plotSeries struct {
	Name  string
	Hist  *hdr.Histogram // nanoseconds
	Color string         // "" = by strategy name, else a spare colour
	Dash  string         // SVG stroke-dasharray, "" = solid
	// Warn, when set, is drawn in red under the series' name (e.g.
	// "SATURATED": an open-loop run that did not keep up with its rate).
	Warn string
}

var plotColors = map[string]string{strategySeq: "#d62728", strategyFanout: "#1f77b4", strategyMux: "#2ca02c"}
var plotSpare = []string{"#9467bd", "#ff7f0e", "#8c564b", "#17becf"}

// writePlot writes the percentile-distribution plot of one metric of every
// strategy in rep as an SVG document.
func writePlot(w io.Writer, rep *Report, metric string) error {
	var series []plotSeries
	var saturated []string
	idx := map[string]int{}
	for i, m := range load.Metrics {
		idx[m] = i
	}
	for i, s := range rep.Strategies {
		if s.hists[0] == nil {
			continue
		}
		color := plotColors[s.Name]
		if color == "" {
			color = plotSpare[i%len(plotSpare)]
		}
		ps := plotSeries{Name: s.Name, Hist: s.hists[idx[metric]], Color: color}
		if s.Saturated {
			ps.Warn = "SATURATED (behind -rate)"
			saturated = append(saturated, s.Name)
		}
		series = append(series, ps)
		// Refused and failed operations are drawn beside the successes, in
		// the strategy's colour, dashed, whenever there are any.
		if metric == load.MetricAcquire && s.hists[load.MNotAcquired].TotalCount() > 0 {
			series = append(series, plotSeries{Name: s.Name + " not acquired", Hist: s.hists[load.MNotAcquired], Color: color, Dash: "2,3"})
		}
		if (metric == load.MetricAcquire || metric == load.MetricAcquireRelease) && s.hists[load.MFailed].TotalCount() > 0 {
			series = append(series, plotSeries{Name: s.Name + " failed", Hist: s.hists[load.MFailed], Color: color, Dash: "8,4"})
		}
	}
	what := metricTitle[metric]
	sub := rep.Config.Target + fmt.Sprintf("; workload %s, %d workers (-c)", rep.Config.Workload, rep.Config.Workers)
	if len(rep.Config.Faults) > 0 {
		sub += "; faults " + strings.Join(rep.Config.Faults, ", ")
	}
	if rep.Config.LatencyMs > 0 {
		sub += fmt.Sprintf("; +%gms reply latency", rep.Config.LatencyMs)
	}
	if rep.Config.Rate > 0 {
		sub += fmt.Sprintf("; open loop %s ops/s", format.Count(rep.Config.Rate))
	}
	if len(saturated) > 0 {
		sub += "; SATURATED: " + strings.Join(saturated, ", ")
	}
	if rep.Interrupted {
		sub += "; INTERRUPTED"
	}
	return writePercentilePlot(w, what+" latency by percentile", sub, series)
}

// writePercentilePlot draws latency (log y) against percentile (x on a
// log scale of 1/(1-p), so 90%, 99%, 99.9%, ... are equally spaced), one
// line per series, in the style of HdrHistogram's plotter.
func writePercentilePlot(w io.Writer, title, subtitle string, series []plotSeries) error {
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
			color = plotColors[s.Name]
		}
		if color == "" {
			color = plotSpare[i%len(plotSpare)]
		}
		dash := ""
		if s.Dash != "" {
			dash = ` stroke-dasharray="` + s.Dash + `"`
		}
		ly := float64(top) + 18 + float64(i)*spacing
		lx := float64(W-right) + 16
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="3"%s/>`+"\n", lx, ly, lx+26, ly, color, dash)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-weight="bold">%s</text>`+"\n", lx+32, ly+4, html.EscapeString(s.Name))
		h := s.Hist
		if h.TotalCount() == 0 {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" fill="#555">no data</text>`+"\n", lx+32, ly+18)
			continue
		}
		pv := load.ValuesAtPercentiles(h, []float64{50, 99})
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" fill="#555">p50 %s  p99 %s</text>`+"\n", lx+32, ly+16,
			format.Us(us(pv[0])), format.Us(us(pv[1])))
		if s.Warn != "" {
			fmt.Fprintf(&b, `<text class="warn" x="%.1f" y="%.1f" font-size="10" font-weight="bold" fill="#d62728">%s</text>`+"\n", lx+32, ly+28, html.EscapeString(s.Warn))
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

func durLabel(ns float64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%gs", ns/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%gms", ns/1e6)
	}
	return fmt.Sprintf("%gus", ns/1e3)
}

// svgOpen starts a plot: the svg element, a white background, the title and
// its subtitle.
func svgOpen(b *strings.Builder, w, h, left int, title, sub string) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica,Arial,sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", w, h)
	// Nothing runs past the right edge: long lines get a smaller font,
	// and a subtitle too long even then is broken in two at a "; ".
	x := min(left, 12)
	avail := float64(w - x - 8)
	fmt.Fprintf(b, `<text x="%d" y="24" font-size="%.1f" font-weight="bold">%s</text>`+"\n", x, fitFont(title, avail, 16, 10, svgBoldWidth), html.EscapeString(title))
	lines := []string{sub}
	if fitFont(sub, avail, 11, 9, svgCharWidth) < 9.5 {
		lines = splitHalf(sub)
	}
	for i, l := range lines {
		fmt.Fprintf(b, `<text x="%d" y="%d" font-size="%.1f" fill="#555">%s</text>`+"\n", x, 42+13*i, fitFont(l, avail, 11, 6, svgCharWidth), html.EscapeString(l))
	}
}

// Average glyph widths of Helvetica/Arial, as a share of the font size
// (wide enough for digits and capitals).
const (
	svgCharWidth = 0.56
	svgBoldWidth = 0.61
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
