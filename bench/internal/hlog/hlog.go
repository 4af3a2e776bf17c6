// Package hlog writes and reads HdrHistogram interval logs (format version
// 1.3, as the Java HdrHistogram and hdrhistogram-go write and read them)
// with the bench's histogram geometry (package bench/load), and merges
// their histograms by tag: bench.hlog, sweep.hlog and merged.hlog.
package hlog

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/redmux/redmux/bench/load"
)

// ErrBad is returned (wrapped) for an interval log that cannot be read.
var ErrBad = errors.New("bad HdrHistogram interval log")

// Writer writes an HdrHistogram interval log (format version 1.3, as the
// Java HdrHistogram and hdrhistogram-go write and read): a header with the
// start and base times, then one line per tagged interval histogram with
// timestamps relative to the base time. Values are nanoseconds.
type Writer struct {
	w    io.Writer
	lw   *hdr.HistogramLogWriter
	err  error
	base int64 // ms since epoch, a whole second
}

// NewWriter writes the log header to w. start is the run's start time;
// comments (one per line, without '#') are written first.
func NewWriter(w io.Writer, start time.Time, comments ...string) *Writer {
	startMs := start.UnixMilli()
	h := &Writer{w: w, lw: hdr.NewHistogramLogWriter(w), base: startMs / 1000 * 1000}
	for _, c := range comments {
		h.keep(h.lw.OutputComment(strings.ReplaceAll(c, "\n", " ")))
	}
	h.keep(h.lw.OutputLogFormatVersion())
	h.keep(h.lw.OutputStartTime(startMs))
	h.keep(h.lw.OutputBaseTime(h.base))
	h.lw.SetBaseTime(h.base)
	h.keep(h.lw.OutputLegend())
	return h
}

func (h *Writer) keep(err error) {
	if h.err == nil && err != nil {
		h.err = err
	}
}

// Write logs one interval histogram with the given tag (no commas, spaces or
// line breaks) covering [from, to).
func (h *Writer) Write(tag string, hist *hdr.Histogram, from, to time.Time) error {
	if h.err != nil {
		return h.err
	}
	hist.SetTag(tag)
	hist.SetStartTimeMs(from.UnixMilli())
	hist.SetEndTimeMs(to.UnixMilli())
	h.keep(h.lw.OutputIntervalHistogram(hist))
	hist.SetTag("")
	return h.err
}

// Err returns the first write error.
func (h *Writer) Err() error { return h.err }

// Read reads every interval histogram of an interval log, in order; each
// keeps its tag and absolute start/end times (ms since epoch).
func Read(r io.Reader) ([]*hdr.Histogram, error) {
	lr := hdr.NewHistogramLogReader(r)
	var out []*hdr.Histogram
	for {
		h, err := lr.NextIntervalHistogram()
		if err != nil {
			return out, fmt.Errorf("%w: interval %d: %v", ErrBad, len(out)+1, err)
		}
		if h == nil {
			return out, nil
		}
		out = append(out, h)
	}
}

// MergeTagged merges histograms by tag (untagged ones under ""), into new
// histograms with the bench geometry. It returns the merged histograms and
// how many recorded values fell outside the geometry and were dropped.
func MergeTagged(hists []*hdr.Histogram) (map[string]*hdr.Histogram, int64) {
	out := map[string]*hdr.Histogram{}
	var dropped int64
	for _, h := range hists {
		m := out[h.Tag()]
		if m == nil {
			m = load.NewHistogram()
			m.SetTag(h.Tag())
			out[h.Tag()] = m
		}
		dropped += m.Merge(h)
	}
	return out, dropped
}

// MergeFiles reads interval logs (from several load-generator machines, say)
// and merges their histograms by tag.
func MergeFiles(paths []string) (map[string]*hdr.Histogram, int, error) {
	var all []*hdr.Histogram
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, 0, err
		}
		hs, err := Read(f)
		f.Close()
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w", p, err)
		}
		if len(hs) == 0 {
			return nil, 0, fmt.Errorf("%s: %w: no interval histograms", p, ErrBad)
		}
		all = append(all, hs...)
	}
	m, dropped := MergeTagged(all)
	if dropped > 0 {
		return m, len(all), fmt.Errorf("%w: %d values outside 1us..60s were dropped", ErrBad, dropped)
	}
	return m, len(all), nil
}
