package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/redmux/redmux/bench/internal/format"
	"github.com/redmux/redmux/bench/internal/plot"
	"github.com/redmux/redmux/bench/load"
)

// WritePlot writes the percentile-distribution plot of one metric of every
// strategy in rep as an SVG document.
func WritePlot(w io.Writer, rep *Report, metric string) error {
	var series []plot.Series
	var saturated []string
	idx := map[string]int{}
	for i, m := range load.Metrics {
		idx[m] = i
	}
	for i, s := range rep.Strategies {
		if s.Hists[0] == nil {
			continue
		}
		color := plot.Color(s.Name, i)
		ps := plot.Series{Name: s.Name, Hist: s.Hists[idx[metric]], Color: color}
		if s.Saturated {
			ps.Warn = "SATURATED (behind -rate)"
			saturated = append(saturated, s.Name)
		}
		series = append(series, ps)
		// Refused and failed operations are drawn beside the successes, in
		// the strategy's colour, dashed, whenever there are any.
		if metric == load.MetricAcquire && s.Hists[load.MNotAcquired].TotalCount() > 0 {
			series = append(series, plot.Series{Name: s.Name + " not acquired", Hist: s.Hists[load.MNotAcquired], Color: color, Dash: "2,3"})
		}
		if (metric == load.MetricAcquire || metric == load.MetricAcquireRelease) && s.Hists[load.MFailed].TotalCount() > 0 {
			series = append(series, plot.Series{Name: s.Name + " failed", Hist: s.Hists[load.MFailed], Color: color, Dash: "8,4"})
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
	return plot.WritePercentiles(w, what+" latency by percentile", sub, series)
}
