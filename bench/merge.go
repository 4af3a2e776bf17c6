package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/redmux/redmux/bench/internal/hlog"
	"github.com/redmux/redmux/bench/internal/report"
	"github.com/redmux/redmux/bench/load"
)

// Files written by redmux-bench merge -out DIR.
const (
	fileMergedHlog = "merged.hlog"
	fileMergedJSON = "merged.json"
	fileMergedCSV  = "merged.csv"
	fileMergedPlot = "merged.svg"
)

// mergeConfig is the command line of redmux-bench merge.
type mergeConfig struct {
	Files       []string
	Start, End  timeBound // -start, -end: which intervals are kept (by their start time)
	Tags        []string  // -tag: glob patterns (path.Match), any of which a tag must match; nil = all
	Out         string    // -out DIR: merged.hlog, merged.json, merged.csv, merged.svg
	Hlog        string    // -hlog FILE
	JSON        string    // -json FILE ("-" = stdout)
	CSV         string    // -csv FILE ("-" = stdout)
	SVG         string    // -svg FILE
	Percentiles []float64 // -percentiles
	Title       string
}

// parseWallTime parses an RFC 3339 time or Unix seconds (with up to nine
// decimals, read exactly).
func parseWallTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	bad := fmt.Errorf("not an RFC 3339 time or Unix seconds: %q", s)
	whole, frac, _ := strings.Cut(s, ".")
	sec, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || sec < 1e9 || sec > 1e11 || len(frac) > 9 {
		return time.Time{}, bad
	}
	var ns int64
	if frac != "" {
		if ns, err = strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64); err != nil || ns < 0 {
			return time.Time{}, bad
		}
	}
	return time.Unix(sec, ns), nil
}

func mergeFlagSet(c *mergeConfig) *flag.FlagSet {
	fs := flag.NewFlagSet("redmux-bench merge", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Var(&c.Start, "start", "keep intervals starting at or after `T`: a duration from the earliest interval over all files (30s), an RFC 3339 time or Unix seconds")
	fs.Var(&c.End, "end", "keep intervals starting before `T` (same forms as -start)")
	fs.Var(tagList{&c.Tags}, "tag", "keep tags matching any of these comma-separated glob `PATTERNS`, e.g. 'mux.*' or '*.acquire_release' (default: every tag)")
	fs.StringVar(&c.Out, "out", "", "write merged.hlog, merged.json, merged.csv and merged.svg to `DIR`")
	fs.StringVar(&c.Hlog, "hlog", "", "write the kept intervals as one interval log to `FILE`")
	fs.StringVar(&c.JSON, "json", "", "write the merged summary as JSON to `FILE` (- = stdout; the table then goes to stderr)")
	fs.StringVar(&c.CSV, "csv", "", "write one CSV row per tag to `FILE` (- = stdout; the table then goes to stderr)")
	fs.StringVar(&c.SVG, "svg", "", "write a percentile plot of the merged tags to `FILE` (default tags plotted: *.acquire_release when there are any)")
	fs.Var(percentileList{&c.Percentiles}, "percentiles", "`LIST` of percentiles for the table, JSON and CSV (default 50,90,99,99.9,99.99)")
	fs.StringVar(&c.Title, "title", "", "plot title")
	return fs
}

// mergeUsage writes redmux-bench merge's flag documentation.
func mergeUsage(w io.Writer) {
	var c mergeConfig
	fs := mergeFlagSet(&c)
	fs.SetOutput(w)
	fmt.Fprintf(w, `redmux-bench merge: merge HdrHistogram interval logs (bench.hlog, sweep.hlog) from several load machines.

Intervals are merged by tag, by their absolute times: runs started together
with -start-at line up. "per s" is a tag's count over the union of the
files' spans, "sum per s" the sum of each file's count over its own span
(the whole run's rate, however well the windows line up). The logs of the
segments of one run (-segment i/n) are checked: each segment at most once,
one n, no log without a segment among them (errors); a segment missing, or
segments of different -start-at, -rate, -c or -keys, is a WARNING on stderr
and in the JSON. The summary table goes to stdout.

Usage:
  redmux-bench merge [flags] FILE...

Flags:
`)
	fs.PrintDefaults()
}

// parseMergeArgs parses redmux-bench merge's arguments (after "merge").
func parseMergeArgs(args []string) (*mergeConfig, error) {
	c := &mergeConfig{}
	fs := mergeFlagSet(c)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, &usageError{Msg: err.Error()}
	}
	c.Files = fs.Args()
	switch {
	case len(c.Files) == 0:
		return nil, usagef("merge needs at least one interval log file (redmux-bench merge [flags] FILE...)")
	case c.JSON == "-" && c.CSV == "-":
		return nil, usagef("-json - and -csv - both want stdout; send one to a file")
	}
	for _, f := range c.Files {
		if strings.HasPrefix(f, "-") {
			return nil, usagef("flags go before the files, got %q after them (redmux-bench merge [flags] FILE...)", f)
		}
	}
	return c, nil
}

// doMerge reads every file and merges the intervals the filters keep, by tag.
func doMerge(c *mergeConfig) (*report.MergeResult, error) {
	type rec struct {
		h    *hdr.Histogram
		file int
	}
	var all []rec
	segs := make([]*hlogSegment, len(c.Files))
	for i, p := range c.Files {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		seg, ok, err := readHlogSegment(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if ok {
			segs[i] = &seg
		}
		hs, err := hlog.Read(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if len(hs) == 0 {
			return nil, fmt.Errorf("%s: %w: no interval histograms", p, hlog.ErrBad)
		}
		for _, h := range hs {
			all = append(all, rec{h, i})
		}
	}
	origin := time.UnixMilli(all[0].h.StartTimeMs())
	for _, r := range all {
		if t := time.UnixMilli(r.h.StartTimeMs()); t.Before(origin) {
			origin = t
		}
	}
	res := &report.MergeResult{Files: c.Files}
	var err error
	if res.Segments, res.Warnings, err = checkSegments(c.Files, segs); err != nil {
		return nil, err
	}
	var filters []string
	if c.Start.set {
		filters = append(filters, "start "+c.Start.at(origin).UTC().Format(time.RFC3339Nano))
	}
	if c.End.set {
		filters = append(filters, "end "+c.End.at(origin).UTC().Format(time.RFC3339Nano))
	}
	if len(c.Tags) > 0 {
		filters = append(filters, "tags "+strings.Join(c.Tags, ","))
	}
	res.Filters = strings.Join(filters, "; ")
	byTag := map[string]*report.MergedTag{}
	files := map[string]map[int]*fileSpan{}
	var first, last int64
	var dropped int64
	for _, r := range all {
		h := r.h
		st := time.UnixMilli(h.StartTimeMs())
		if (c.Start.set && st.Before(c.Start.at(origin))) || (c.End.set && !st.Before(c.End.at(origin))) || !tagMatches(h.Tag(), c.Tags) {
			res.Skipped++
			continue
		}
		res.Intervals++
		res.Kept = append(res.Kept, h)
		m := byTag[h.Tag()]
		if m == nil {
			m = &report.MergedTag{Tag: h.Tag(), Hist: load.NewHistogram()}
			byTag[h.Tag()] = m
			files[h.Tag()] = map[int]*fileSpan{}
		}
		m.Intervals++
		files[h.Tag()][r.file] = files[h.Tag()][r.file].add(h)
		dropped += m.Hist.Merge(h)
		if first == 0 || h.StartTimeMs() < first {
			first = h.StartTimeMs()
		}
		last = max(last, h.EndTimeMs())
		if m.Start == "" || h.StartTimeMs() < mustMs(m.Start) {
			m.Start = msTime(h.StartTimeMs())
		}
		if m.End == "" || h.EndTimeMs() > mustMs(m.End) {
			m.End = msTime(h.EndTimeMs())
		}
	}
	if dropped > 0 {
		return nil, fmt.Errorf("%w: %d values outside 1us..60s were dropped", hlog.ErrBad, dropped)
	}
	if res.Intervals == 0 {
		return nil, fmt.Errorf("no interval is left after the filters (%s); the logs cover %s onwards", res.Filters, origin.UTC().Format(time.RFC3339))
	}
	res.Start, res.End = msTime(first), msTime(last)
	sort.Slice(res.Kept, func(i, j int) bool { return res.Kept[i].StartTimeMs() < res.Kept[j].StartTimeMs() })
	for tag, m := range byTag {
		m.Files = len(files[tag])
		m.Latency = report.Summarize(m.Hist, c.Percentiles...)
		if d := mustMs(m.End) - mustMs(m.Start); d > 0 {
			m.PerSec = float64(m.Hist.TotalCount()) / (float64(d) / 1e3)
		}
		for _, f := range files[tag] {
			m.SumPerSec += f.perSec()
		}
		res.Tags = append(res.Tags, m)
	}
	sort.Slice(res.Tags, func(i, j int) bool { return res.Tags[i].Tag < res.Tags[j].Tag })
	return res, nil
}

// fileSpan is one file's kept intervals of one tag: their count and span.
type fileSpan struct{ first, last, count int64 }

// add counts h in s (a new span when s is nil).
func (s *fileSpan) add(h *hdr.Histogram) *fileSpan {
	if s == nil {
		s = &fileSpan{first: h.StartTimeMs(), last: h.EndTimeMs()}
	}
	s.first, s.last = min(s.first, h.StartTimeMs()), max(s.last, h.EndTimeMs())
	s.count += h.TotalCount()
	return s
}

// perSec is the span's rate (0 for an empty span).
func (s *fileSpan) perSec() float64 {
	if s.last <= s.first {
		return 0
	}
	return float64(s.count) / (float64(s.last-s.first) / 1e3)
}

func msTime(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano) }

func mustMs(s string) int64 {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t.UnixMilli()
}

func tagMatches(tag string, pats []string) bool {
	if len(pats) == 0 {
		return true
	}
	for _, p := range pats {
		if ok, _ := path.Match(p, tag); ok {
			return true
		}
	}
	return false
}

// writeMergedHlog writes the kept intervals, in start order, as one
// interval log (tags kept; base time the earliest start).
func writeMergedHlog(w io.Writer, r *report.MergeResult) error {
	if len(r.Kept) == 0 {
		return errors.New("no intervals")
	}
	start := time.UnixMilli(r.Kept[0].StartTimeMs())
	hw := hlog.NewWriter(w, start, "redmux-bench merge of "+strings.Join(r.Files, " "), "filters: "+r.Filters, "merged by "+versionString())
	for _, h := range r.Kept {
		tag := h.Tag()
		if err := hw.Write(tag, h, time.UnixMilli(h.StartTimeMs()), time.UnixMilli(h.EndTimeMs())); err != nil {
			return err
		}
		h.SetTag(tag) // Write clears it
	}
	return hw.Err()
}

func mergePercentiles(c *mergeConfig) []float64 {
	if len(c.Percentiles) > 0 {
		return c.Percentiles
	}
	return report.DefaultPercentiles
}

// runMerge is redmux-bench merge.
func runMerge(c *mergeConfig, stdout, stderr io.Writer) error {
	r, err := doMerge(c)
	if err != nil {
		return err
	}
	tableOut := stdout
	if c.JSON == "-" || c.CSV == "-" {
		tableOut = stderr
	}
	for _, w := range r.Warnings {
		fmt.Fprintln(stderr, "redmux-bench: merge: WARNING: "+w)
	}
	report.WriteMergedTable(tableOut, r, mergePercentiles(c))
	jsonW := func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	hlogW := func(w io.Writer) error { return writeMergedHlog(w, r) }
	csvW := func(w io.Writer) error { return report.WriteMergedCSV(w, r, mergePercentiles(c)) }
	svgW := func(w io.Writer) error { return report.WriteMergedPlot(w, r, c.Title, len(c.Tags) > 0) }
	outs := []struct {
		path  string
		write func(io.Writer) error
	}{{c.JSON, jsonW}, {c.CSV, csvW}, {c.Hlog, hlogW}, {c.SVG, svgW}}
	if c.Out != "" {
		if err := os.MkdirAll(c.Out, 0o755); err != nil {
			return err
		}
		outs = append(outs, []struct {
			path  string
			write func(io.Writer) error
		}{{filepath.Join(c.Out, fileMergedHlog), hlogW}, {filepath.Join(c.Out, fileMergedJSON), jsonW},
			{filepath.Join(c.Out, fileMergedCSV), csvW}, {filepath.Join(c.Out, fileMergedPlot), svgW}}...)
	}
	for _, o := range outs {
		if o.path == "" {
			continue
		}
		if err := writeTo(o.path, stdout, o.write); err != nil {
			return err
		}
	}
	return nil
}
