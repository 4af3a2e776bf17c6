package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/redmux/redmux/bench/internal/format"
	"github.com/redmux/redmux/bench/internal/plot"
	"github.com/redmux/redmux/bench/load"
)

// WriteMergedTable prints one row per tag: count, rate and percentiles.
func WriteMergedTable(w io.Writer, r *MergeResult, pcts []float64) {
	fmt.Fprintf(w, "merged %d interval histograms from %d files (latency in us)", r.Intervals, len(r.Files))
	if r.Filters != "" {
		fmt.Fprintf(w, "; %s; %d intervals left out", r.Filters, r.Skipped)
	}
	fmt.Fprintln(w)
	if r.Segments != nil {
		fmt.Fprintln(w, r.Segments.Describe())
	}
	MergedColumns(pcts, len(r.Files) > 1).table(r.Tags).Write(w)
}

// WriteMergedCSV writes one row per tag.
func WriteMergedCSV(w io.Writer, r *MergeResult, pcts []float64) error {
	return MergedColumns(pcts, false).writeCSV(w, r.Tags)
}

// MergedColumns are the merge's table's columns and merged.csv's, one row
// per tag; several: the table's "sum per s" column (more than one file).
func MergedColumns(pcts []float64, several bool) Columns[*MergedTag] {
	cs := Columns[*MergedTag]{
		{Head: "tag", CSV: "tag", JSON: "tag", Cell: func(m *MergedTag) string {
			if m.Tag == "" {
				return "(untagged)"
			}
			return m.Tag
		}, Raw: func(m *MergedTag) string { return m.Tag }},
		{Head: "count", CSV: "count", JSON: "latency.count", Cell: func(m *MergedTag) string { return fmtInt(m.Latency.Count) }},
		{CSV: "intervals", JSON: "intervals", Cell: func(m *MergedTag) string { return fmt.Sprint(m.Intervals) }},
		{Head: "files", CSV: "files", JSON: "files", Cell: func(m *MergedTag) string { return fmt.Sprint(m.Files) }},
		{CSV: "start", JSON: "start", Cell: func(m *MergedTag) string { return m.Start }},
		{CSV: "end", JSON: "end", Cell: func(m *MergedTag) string { return m.End }},
		{Head: "per s", CSV: "per_sec", JSON: "per_sec", Cell: func(m *MergedTag) string { return format.Count(m.PerSec) }, Raw: func(m *MergedTag) string { return csvFloat(m.PerSec) }},
	}
	if several {
		cs = append(cs, Column[*MergedTag]{Head: "sum per s", JSON: "sum_per_sec", Cell: func(m *MergedTag) string { return format.Count(m.SumPerSec) }})
	}
	cs = append(cs, Columns[*MergedTag]{
		{Head: "min", CSV: "min_us", JSON: "latency.min_us", Cell: func(m *MergedTag) string { return f1(m.Latency.MinUs) }, Raw: func(m *MergedTag) string { return csvFloat(m.Latency.MinUs) }},
		{CSV: "mean_us", JSON: "latency.mean_us", Cell: func(m *MergedTag) string { return csvFloat(m.Latency.MeanUs) }},
	}...)
	for _, p := range pcts {
		cs = append(cs, Column[*MergedTag]{Head: format.Percentile(p), CSV: format.Percentile(p) + "_us", JSON: "latency", Cell: func(m *MergedTag) string {
			v, ok := m.Latency.At(p)
			if !ok {
				v = us(load.ValueAtPercentile(m.Hist, p))
			}
			return f1(v)
		}, Raw: func(m *MergedTag) string { return csvFloat(us(load.ValueAtPercentile(m.Hist, p))) }})
	}
	return append(cs, Column[*MergedTag]{Head: "max", CSV: "max_us", JSON: "latency.max_us", Cell: func(m *MergedTag) string { return f1(m.Latency.MaxUs) }, Raw: func(m *MergedTag) string { return csvFloat(m.Latency.MaxUs) }})
}

// WriteMergedPlot draws the merged tags' percentile distributions: those
// matching -tag when given (tags), else the *.acquire_release tags when there are
// any, else every tag.
func WriteMergedPlot(w io.Writer, r *MergeResult, title string, tags bool) error {
	var series []plot.Series
	pick := func(m *MergedTag) bool {
		if tags {
			return true
		}
		return strings.HasSuffix(m.Tag, "."+load.MetricAcquireRelease)
	}
	anyAR := false
	for _, m := range r.Tags {
		anyAR = anyAR || pick(m)
	}
	for i, m := range r.Tags {
		if anyAR && !pick(m) {
			continue
		}
		name := m.Tag
		color := plot.Color(strings.SplitN(name, ".", 2)[0], i)
		if len(series) >= 3 {
			color = plot.Spare(i)
		}
		series = append(series, plot.Series{Name: name, Hist: m.Hist, Color: color})
	}
	if title == "" {
		title = "Merged latency by percentile"
	}
	sub := fmt.Sprintf("%d files, %d intervals, %s .. %s", len(r.Files), r.Intervals, r.Start, r.End)
	if r.Filters != "" {
		sub += "; " + r.Filters
	}
	return plot.WritePercentiles(w, title, sub, series)
}

// Describe is the merged segments in words (the merge table's second line).
func (m *MergedSegments) Describe() string {
	s := fmt.Sprintf("segments: %d of %d of one run (-start-at %s)", len(m.Present), m.Count, m.StartAt)
	if len(m.Missing) == 0 {
		s += ", complete"
	} else {
		s += fmt.Sprintf(", %d missing", len(m.Missing))
	}
	if m.TotalRate > 0 {
		s += fmt.Sprintf("; the whole run's target rate %.6g ops/s", m.TotalRate)
	}
	return s
}
