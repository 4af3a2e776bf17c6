package plot

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"

	"github.com/redmux/redmux/bench/internal/format"
)

// Sweep is what a sweep plot draws: each strategy's steps, and the share
// of failed operations over which a step is marked as a failure.
type Sweep struct {
	Strategies     []SweepSeries
	MaxFailedShare float64
}

// SweepSeries is one strategy of a sweep plot.
type SweepSeries struct {
	Name string
	// SLOPct and SLOBudgetUs are the strategy's objective: percentile
	// SLOPct at most SLOBudgetUs microseconds.
	SLOPct, SLOBudgetUs float64
	// Capacity is the legend's line under the name ("capacity 2000
	// ops/s", "no step held").
	Capacity string
	// Caveats are legend lines under Capacity, the report's caveats in
	// short ("plan figures: at most", "CPU-starved machine", "cost: one
	// step, not a fit").
	Caveats []string
	Steps   []SweepStep
	// Knee, when set, is ringed: the step where the sweep reached
	// capacity.
	Knee *SweepStep
}

// SweepStep is one step of a sweep: the rate it aimed at and achieved,
// its latencies (microseconds) and outcome.
type SweepStep struct {
	TargetRate, OpsPerSec float64
	// Ops is the step's operations: a step with none, or one run again
	// (Repeated), counts towards the axes but is not drawn.
	Ops      int64
	Repeated bool
	// SLOUs is the objective's percentile, P50Us the median.
	SLOUs, P50Us float64
	// Held: the step met the objective (a solid marker, else hollow);
	// Saturated: it did not keep up with its rate (a red cross);
	// FailedShare over MaxFailedShare is marked as a failure instead.
	Held, Saturated bool
	FailedShare     float64
}

// WriteSweep draws latency (log y) against achieved throughput (x), per
// strategy: the objective's percentile solid, p50 dashed; a hollow marker
// for a step that did not hold; a ring on the knee; the objective as a
// dotted line when every strategy has the same; as an SVG document.
func WriteSweep(w io.Writer, title, subtitle string, s Sweep) error {
	const (
		W, H                  = 860, 520
		left, right, top, bot = 80, 210, 62, 70
	)
	pw, ph := float64(W-left-right), float64(H-top-bot)
	xMin, xMax, lo, hi := math.Inf(1), 0.0, math.Inf(1), math.Inf(-1)
	for _, ss := range s.Strategies {
		for _, st := range ss.Steps {
			xMax = math.Max(xMax, math.Max(st.OpsPerSec, st.TargetRate))
			if st.OpsPerSec > 0 {
				xMin = math.Min(xMin, st.OpsPerSec)
			}
			for _, v := range []float64{st.P50Us, st.SLOUs} {
				if v > 0 {
					lo, hi = math.Min(lo, v), math.Max(hi, v)
				}
			}
		}
		if ss.SLOBudgetUs > 0 {
			hi = math.Max(hi, ss.SLOBudgetUs)
			lo = math.Min(lo, ss.SLOBudgetUs)
		}
	}
	if math.IsInf(lo, 1) {
		lo, hi = 100, 1000
	}
	// A log rate axis: strategies an order of magnitude apart each get
	// their share of the width, from a 1-2-5 tick below the lightest step
	// to one above the heaviest.
	xLo, xHi := logAxis(xMin, xMax)
	yLo := math.Floor(math.Log10(math.Max(lo, 1)))
	yHi := math.Ceil(math.Log10(math.Max(hi, lo*1.01)))
	if yHi-yLo < 1 {
		yHi = yLo + 1
	}
	px := func(x float64) float64 {
		v := math.Min(math.Max(math.Log10(math.Max(x, 1e-9)), xLo), xHi)
		return float64(left) + (v-xLo)/(xHi-xLo)*pw
	}
	xMax = math.Pow(10, xHi)
	py := func(usv float64) float64 {
		v := math.Log10(math.Max(usv, 1e-3))
		v = math.Min(math.Max(v, yLo), yHi)
		return float64(top) + ph - (v-yLo)/(yHi-yLo)*ph
	}
	var b strings.Builder
	svgOpen(&b, W, H, left, title, subtitle)
	for d := yLo; d <= yHi; d++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, d)
			if math.Log10(v) > yHi+1e-9 {
				break
			}
			y := py(v)
			stroke, size, fill := "#cccccc", "12", "#000"
			if m != 1 {
				stroke, size, fill = "#eeeeee", "10", "#888"
			}
			fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", left, y, px(xMax), y, stroke)
			fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" font-size="%s" fill="%s">%s</text>`+"\n", left-8, y+4, size, fill, durLabel(v*1e3))
		}
	}
	for _, x := range logTicks(xLo, xHi) {
		X := px(x)
		stroke, fill := "#cccccc", "#000"
		if m := x / math.Pow(10, math.Floor(math.Log10(x)+1e-9)); math.Abs(m-1) > 1e-6 {
			stroke, fill = "#eeeeee", "#888"
		}
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", X, top, X, float64(top)+ph, stroke)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="%s">%s</text>`+"\n", X, float64(top)+ph+18, fill, format.Count(x))
	}
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%.1f" fill="none" stroke="#333"/>`+"\n", left, top, pw, ph)
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">achieved throughput (lock operations/s, log scale)</text>`+"\n", float64(left)+pw/2, H-22)
	fmt.Fprintf(&b, `<text transform="translate(20 %.1f) rotate(-90)" text-anchor="middle">latency of every operation (log scale)</text>`+"\n", float64(top)+ph/2)

	same := len(s.Strategies) > 0
	for _, ss := range s.Strategies {
		same = same && ss.SLOBudgetUs == s.Strategies[0].SLOBudgetUs && ss.SLOPct == s.Strategies[0].SLOPct
	}
	ly := float64(top) + 14
	lx := float64(W-right) + 16
	if same {
		y := py(s.Strategies[0].SLOBudgetUs)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#000" stroke-dasharray="1,3" stroke-width="1.5"/>`+"\n", left, y, px(xMax), y)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end" font-size="10">objective %s</text>`+"\n", px(xMax)-4, y-4,
			html.EscapeString(format.Percentile(s.Strategies[0].SLOPct)+" < "+format.Us(s.Strategies[0].SLOBudgetUs)))
	}
	for i, ss := range s.Strategies {
		color := Color(ss.Name, i)
		drawSweepSeries(&b, ss, color, s.MaxFailedShare, px, py)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="3"/>`+"\n", lx, ly, lx+26, ly, color)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-weight="bold">%s</text>`+"\n", lx+32, ly+4, html.EscapeString(ss.Name))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" fill="#555">%s</text>`+"\n", lx+32, ly+18, html.EscapeString(ss.Capacity))
		for _, c := range ss.Caveats {
			ly += 13
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" fill="#b00">%s</text>`+"\n", lx+32, ly+18, html.EscapeString(c))
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" fill="#555">solid %s, dashed p50</text>`+"\n", lx+32, ly+31, format.Percentile(ss.SLOPct))
		if !same {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" fill="#555">objective &lt; %s</text>`+"\n", lx+32, ly+44, format.Us(ss.SLOBudgetUs))
			ly += 13
		}
		ly += 50
	}
	drawSweepLegendKeys(&b, lx, ly, s.MaxFailedShare)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// drawSweepSeries draws one strategy's steps: its objective percentile
// (solid, a circle per step, hollow where it did not hold), its p50
// (dashed), saturated steps and the knee.
func drawSweepSeries(b *strings.Builder, ss SweepSeries, color string, maxFailedShare float64, px, py func(float64) float64) {
	var pSLO, p50 []string
	for _, st := range ss.Steps {
		if st.Ops == 0 || st.Repeated {
			continue
		}
		pSLO = append(pSLO, fmt.Sprintf("%.1f,%.1f", px(st.OpsPerSec), py(st.SLOUs)))
		p50 = append(p50, fmt.Sprintf("%.1f,%.1f", px(st.OpsPerSec), py(st.P50Us)))
	}
	fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="2" stroke-linejoin="round" points="%s"/>`+"\n", color, strings.Join(pSLO, " "))
	fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="1.5" stroke-dasharray="5,4" points="%s"/>`+"\n", color, strings.Join(p50, " "))
	for _, st := range ss.Steps {
		if st.Ops == 0 || st.Repeated {
			continue
		}
		fill := color
		if !st.Held {
			fill = "#ffffff"
		}
		fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s" stroke="%s" stroke-width="1.5"/>`+"\n", px(st.OpsPerSec), py(st.SLOUs), fill, color)
		switch {
		case st.FailedShare > maxFailedShare:
			failedMark(b, px(st.OpsPerSec), py(st.SLOUs))
		case st.Saturated:
			saturatedMark(b, px(st.OpsPerSec), py(st.SLOUs))
		}
	}
	if k := ss.Knee; k != nil {
		fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="8" fill="none" stroke="%s" stroke-width="2"/>`+"\n", px(k.OpsPerSec), py(k.SLOUs), color)
	}
}

// drawSweepLegendKeys draws the legend's keys to the step marks at lx, ly.
func drawSweepLegendKeys(b *strings.Builder, lx, ly, maxFailedShare float64) {
	fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="#888" stroke="#888"/>`+"\n", lx+6, ly)
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="10" fill="#555">step held</text>`+"\n", lx+16, ly+4)
	fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="#fff" stroke="#888" stroke-width="1.5"/>`+"\n", lx+6, ly+16)
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="10" fill="#555">did not hold</text>`+"\n", lx+16, ly+20)
	fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="7" fill="none" stroke="#888" stroke-width="2"/>`+"\n", lx+6, ly+36)
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="10" fill="#555">knee (capacity)</text>`+"\n", lx+16, ly+40)
	fmt.Fprintf(b, `<path d="M%.1f,%.1f l10,10 m0,-10 l-10,10" stroke="#d62728" stroke-width="2"/>`+"\n", lx+1, ly+47)
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="10" fill="#d62728">saturated (did not keep up)</text>`+"\n", lx+16, ly+56)
	fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="10" height="10" fill="none" stroke="#000" stroke-width="2"/>`+"\n", lx+1, ly+65)
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="10">failed (over %g%% errors)</text>`+"\n", lx+16, ly+74, 100*maxFailedShare)
}

// failedMark draws a black square around a step that did not hold on
// failures (more than Sweep.MaxFailedShare of its operations failed): a
// failure, not a latency miss.
func failedMark(b *strings.Builder, x, y float64) {
	fmt.Fprintf(b, `<rect class="failed" x="%.1f" y="%.1f" width="12" height="12" fill="none" stroke="#000" stroke-width="2"/>`+"\n", x-6, y-6)
}

// saturatedMark draws a red cross over a saturated step's marker.
func saturatedMark(b *strings.Builder, x, y float64) {
	fmt.Fprintf(b, `<path class="saturated" d="M%.1f,%.1f l12,12 m0,-12 l-12,12" stroke="#d62728" stroke-width="2"/>`+"\n", x-6, y-6)
}

// logAxis is a log10 axis from the 1-2-5 value at or below lo to the one
// at or above hi (at least a factor 5 wide).
func logAxis(lo, hi float64) (float64, float64) {
	if math.IsInf(lo, 1) || lo <= 0 {
		lo = math.Max(hi/10, 1)
	}
	hi = math.Max(hi, lo)
	a, b := math.Log10(niceFloor(lo)), math.Log10(niceCeil(hi*1.02))
	if b-a < math.Log10(5) {
		a = b - math.Log10(5)
	}
	return a, b
}

// logTicks are the 1-2-5 values between 10^a and 10^b.
func logTicks(a, b float64) []float64 {
	var out []float64
	for d := math.Floor(a); d <= math.Ceil(b); d++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, d)
			if l := math.Log10(v); l >= a-1e-9 && l <= b+1e-9 {
				out = append(out, v)
			}
		}
	}
	return out
}

// niceFloor rounds v down to 1, 2 or 5 times a power of ten.
func niceFloor(v float64) float64 {
	if v <= 0 {
		return 1
	}
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{5, 2, 1} {
		if m*e <= v+1e-9 {
			return m * e
		}
	}
	return e
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*e >= v-1e-9 {
			return m * e
		}
	}
	return 10 * e
}
