// This file holds redmux-bench render: a run's or a sweep's plots (and
// report, where the recorded data hold everything it shows) redrawn with
// the current writer from the files of its -out directory, so that reports
// made before an upgrade can be read with today's plots without measuring
// again.

package bench

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/redmux/redmux/bench/internal/hlog"
	"github.com/redmux/redmux/bench/internal/report"
	"github.com/redmux/redmux/bench/load"
)

// errCannotRender is returned (wrapped) for a directory whose plots cannot
// be redrawn from its files: what they need is missing or inconsistent.
var errCannotRender = errors.New("cannot redraw")

// renderUsage writes redmux-bench render's documentation.
func renderUsage(w io.Writer) {
	fmt.Fprintf(w, `redmux-bench render: redraw a run's or a sweep's plots (and report) with this version's writer, from the files in its -out directory.

A run directory (summary.json and bench.hlog) gets percentiles.svg and
percentiles-acquire.svg, drawn from the interval log's histograms (each
tag's count checked against summary.json); a sweep directory (sweep.json)
gets sweep.svg. report.md (sweep.md) is rewritten only when the JSON holds
every field this version writes; otherwise it is kept, and the fields its
writer would lack are named. The JSON, CSV and interval log are never
written: no measured figure changes. A directory whose plots cannot be
drawn from its files (a field or an interval-log tag missing, counts that
disagree) is refused, not guessed.

Usage:
  redmux-bench render DIR...

Exit status: 0 every directory's plots redrawn, 1 some directory refused
(the others are still redrawn), 2 usage error.
`)
}

// renderMain is redmux-bench render.
func renderMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("redmux-bench render", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			renderUsage(stdout)
			return ExitOK
		}
		fmt.Fprintf(stderr, "redmux-bench: render: %v (see redmux-bench render -h)\n", err)
		return ExitUsage
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "redmux-bench: render: no directory given: redmux-bench render DIR... (see redmux-bench render -h)")
		return ExitUsage
	}
	code := ExitOK
	for _, dir := range fs.Args() {
		out, err := renderDir(dir)
		if err != nil {
			fmt.Fprintf(stderr, "redmux-bench: render: %s\n", oneLine(err.Error()))
			code = ExitFailure
			continue
		}
		fmt.Fprintln(stdout, out)
	}
	return code
}

// renderOutcome is what render did in one directory.
type renderOutcome struct {
	dir   string
	drawn []string // files rewritten
	kept  string   // the report kept, and why ("" when rewritten)
}

func (o *renderOutcome) String() string {
	s := fmt.Sprintf("%s: redrew %s", o.dir, strings.Join(o.drawn, ", "))
	if o.kept != "" {
		s += "; kept " + o.kept
	}
	return s
}

// renderDir redraws dir's plots, and its report when the JSON is complete.
// Nothing is written unless every plot could be drawn.
func renderDir(dir string) (*renderOutcome, error) {
	if _, err := os.Stat(filepath.Join(dir, report.FileSweepJSON)); err == nil {
		return renderSweep(dir)
	}
	if _, err := os.Stat(filepath.Join(dir, report.FileSummary)); err == nil {
		return renderRun(dir)
	}
	return nil, fmt.Errorf("%s: %w: neither %s nor %s in it", dir, errCannotRender, report.FileSummary, report.FileSweepJSON)
}

// readJSON reads a report's JSON and decodes it with dec, keeping the
// generic document too (to tell a field that is absent from one that is
// zero).
func readJSON[T any](path string, dec func(*report.File) (T, error)) (v T, doc any, err error) {
	f, err := report.Read(path)
	if err != nil {
		return v, nil, err
	}
	if v, err = dec(f); err != nil {
		return v, nil, err
	}
	return v, f.Doc, nil
}

// Fields the plots are drawn from; a JSON without one of them is refused.
var (
	runPlotFields = []string{"config.target", "config.workload", "config.workers", "strategies[].name",
		"strategies[].acquire.count", "strategies[].release.count", "strategies[].acquire_release.count",
		"strategies[].not_acquired_latency.count", "strategies[].failed_latency.count"}
	sweepPlotFields = []string{"config.target", "config.workload", "config.workers", "config.duration_s",
		"strategies[].name", "strategies[].slo_percentile", "strategies[].slo_budget_us", "strategies[].knee_rate",
		"strategies[].reached_saturation", "strategies[].steps[].target_rate", "strategies[].steps[].ops_per_sec",
		"strategies[].steps[].ops", "strategies[].steps[].held", "strategies[].steps[].saturated",
		"strategies[].steps[].failed_share", "strategies[].steps[].slo_us", "strategies[].steps[].latency.p50_us"}
)

// renderRun redraws a run directory: the two percentile plots from
// bench.hlog (each strategy's metric checked against summary.json's count),
// report.md when summary.json is complete.
func renderRun(dir string) (*renderOutcome, error) {
	rep, doc, err := readJSON(filepath.Join(dir, report.FileSummary), (*report.File).Run)
	if err != nil {
		return nil, err
	}
	if miss := missingPaths(doc, runPlotFields); len(miss) > 0 {
		return nil, fmt.Errorf("%s: %w: %s lacks %s", dir, errCannotRender, report.FileSummary, strings.Join(miss, ", "))
	}
	if err := histsFromHlog(dir, rep); err != nil {
		return nil, err
	}
	out := &renderOutcome{dir: dir}
	files := []artifact{
		{report.FilePlot, func(w io.Writer) error { return report.WritePlot(w, rep, load.MetricAcquireRelease) }},
		{report.FilePlotAcquire, func(w io.Writer) error { return report.WritePlot(w, rep, load.MetricAcquire) }},
	}
	if miss := missingFields(reflect.TypeOf(rep), doc); len(miss) > 0 {
		out.kept = fmt.Sprintf("%s: %s lacks %s, which this version's report shows or needs (written by an earlier version)", report.FileReport, report.FileSummary, strings.Join(miss, ", "))
	} else {
		files = append(files, artifact{report.FileReport, func(w io.Writer) error { return report.WriteMarkdown(w, rep) }})
	}
	return out, writeAll(dir, files, out)
}

// histsFromHlog sets each strategy's histograms from dir's bench.hlog (tags
// <strategy>.<metric>), refusing a log whose totals are not summary.json's
// counts (a metric the log lacks must have a count of 0).
func histsFromHlog(dir string, rep *report.Report) error {
	path := filepath.Join(dir, report.FileHlog)
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%s: %w: %v", dir, errCannotRender, err)
	}
	hs, err := hlog.Read(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	tagged, dropped := hlog.MergeTagged(hs)
	if dropped > 0 {
		return fmt.Errorf("%s: %w: %d values outside 1us..60s", path, errCannotRender, dropped)
	}
	for _, s := range rep.Strategies {
		for i, m := range load.Metrics {
			h := tagged[s.Name+"."+m]
			if h == nil {
				h = load.NewHistogram()
			}
			if got, want := h.TotalCount(), s.Metric(m).Count; got != want {
				return fmt.Errorf("%s: %w: tag %s.%s holds %d values, %s counts %d", path, errCannotRender, s.Name, m, got, report.FileSummary, want)
			}
			s.Hists[i] = h
		}
	}
	return nil
}

// renderSweep redraws a sweep directory: sweep.svg from sweep.json, and
// sweep.md when sweep.json is complete.
func renderSweep(dir string) (*renderOutcome, error) {
	rep, doc, err := readJSON(filepath.Join(dir, report.FileSweepJSON), (*report.File).Sweep)
	if err != nil {
		return nil, err
	}
	if miss := missingPaths(doc, sweepPlotFields); len(miss) > 0 {
		return nil, fmt.Errorf("%s: %w: %s lacks %s", dir, errCannotRender, report.FileSweepJSON, strings.Join(miss, ", "))
	}
	for _, ss := range rep.Strategies {
		relinkKnee(ss)
	}
	out := &renderOutcome{dir: dir}
	files := []artifact{{report.FileSweepPlot, func(w io.Writer) error { return report.WriteSweepPlot(w, rep) }}}
	if miss := missingFields(reflect.TypeOf(rep), doc); len(miss) > 0 {
		out.kept = fmt.Sprintf("%s: %s lacks %s, which this version's report shows or needs (written by an earlier version)", report.FileSweepReport, report.FileSweepJSON, strings.Join(miss, ", "))
	} else {
		files = append(files, artifact{report.FileSweepReport, func(w io.Writer) error { return report.WriteSweepMarkdown(w, rep) }})
	}
	return out, writeAll(dir, files, out)
}

// relinkKnee points ss.Knee at the step it copies (JSON holds the knee as
// a copy; the writers compare steps with it by identity).
func relinkKnee(ss *report.SweepStrategy) {
	if ss.Knee == nil {
		return
	}
	for _, st := range ss.Steps {
		if reflect.DeepEqual(*st, *ss.Knee) {
			ss.Knee = st
			return
		}
	}
}

// writeAll draws every file in memory first, then writes them: a file that
// cannot be drawn leaves the directory as it was.
func writeAll(dir string, files []artifact, out *renderOutcome) error {
	bufs := make([][]byte, len(files))
	for i, f := range files {
		var b bytes.Buffer
		if err := f.write(&b); err != nil {
			return fmt.Errorf("%s: %s: %w", dir, f.name, err)
		}
		bufs[i] = b.Bytes()
	}
	for i, f := range files {
		if err := writeFile(filepath.Join(dir, f.name), writeBytes(bufs[i])); err != nil {
			return err
		}
		out.drawn = append(out.drawn, f.name)
	}
	return nil
}

// missingPaths returns the paths ("a.b", "list[].field") absent from doc;
// a path through a list is missing when any element lacks it.
func missingPaths(doc any, paths []string) []string {
	var out []string
	for _, p := range paths {
		if !hasPath(doc, strings.Split(p, ".")) {
			out = append(out, p)
		}
	}
	return out
}

func hasPath(v any, parts []string) bool {
	if len(parts) == 0 {
		return true
	}
	name, list := strings.CutSuffix(parts[0], "[]")
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	x, ok := m[name]
	if !ok {
		return false
	}
	if !list {
		return hasPath(x, parts[1:])
	}
	l, _ := x.([]any)
	for _, e := range l {
		if !hasPath(e, parts[1:]) {
			return false
		}
	}
	return true
}

// missingFields returns the fields that t's JSON always holds (no
// omitempty) and doc lacks, as paths, sorted: a JSON written before such a
// field existed. Maps are not looked into; optional structs only where
// present.
func missingFields(t reflect.Type, doc any) []string {
	set := map[string]bool{}
	walkFields(t, doc, "", set)
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

var histType = reflect.TypeOf(hdr.Histogram{})

func walkFields(t reflect.Type, v any, path string, missing map[string]bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice:
		l, _ := v.([]any)
		for _, e := range l {
			walkFields(t.Elem(), e, path+"[]", missing)
		}
	case reflect.Struct:
		if t == histType {
			return
		}
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if !f.IsExported() || tag == "" || tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			p := name
			if path != "" {
				p = path + "." + name
			}
			x, ok := m[name]
			if !ok {
				if opts != "omitempty" {
					missing[p] = true
				}
				continue
			}
			walkFields(f.Type, x, p, missing)
		}
	}
}
