// This file holds -segment i/n: one load-generator process's share of a
// run spread over n processes (k6's execution segments), and what merge
// reads back of it.

package bench

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redmux/redmux/bench/internal/hlog"
	"github.com/redmux/redmux/bench/internal/report"
	"github.com/redmux/redmux/bench/load"
)

// maxSegments is the largest n of -segment i/n.
const maxSegments = 10000

// Segment is -segment i/n: this process runs the i-th of n equal shares
// of the run (0-based). The shares are k6's execution segments
// [i/n, (i+1)/n) of the whole: of the open-loop rate, of the workers (-c)
// and, where each worker has keys of its own, of the key space. Count 0:
// no segment (the whole run).
type Segment struct {
	Index, Count int
}

// IsSet reports whether a segment was given.
func (s Segment) IsSet() bool { return s.Count > 0 }

func (s Segment) String() string {
	if !s.IsSet() {
		return ""
	}
	return strconv.Itoa(s.Index) + "/" + strconv.Itoa(s.Count)
}

// parseSegment parses "i/n" with 0 <= i < n <= maxSegments.
func parseSegment(v string) (Segment, error) {
	is, ns, ok := strings.Cut(strings.TrimSpace(v), "/")
	i, err1 := strconv.Atoi(is)
	n, err2 := strconv.Atoi(ns)
	switch {
	case !ok || err1 != nil || err2 != nil:
		return Segment{}, fmt.Errorf("want i/n, the i-th of n processes counted from 0 (0/2 and 1/2 split a run in two), got %q", v)
	case n < 1 || n > maxSegments:
		return Segment{}, fmt.Errorf("n in i/n must be 1..%d, got %d", maxSegments, n)
	case i < 0 || i >= n:
		return Segment{}, fmt.Errorf("i in i/n must be 0..%d (counted from 0), got %d", n-1, i)
	}
	return Segment{Index: i, Count: n}, nil
}

// Range is the segment's share of total whole things (workers, keys):
// [lo, hi) with lo = floor(total*i/n), hi = floor(total*(i+1)/n). The n
// ranges are contiguous and disjoint and cover [0, total) exactly once.
func (s Segment) Range(total int) (lo, hi int) {
	if !s.IsSet() {
		return 0, total
	}
	t, i, n := int64(total), int64(s.Index), int64(s.Count)
	return int(t * i / n), int(t * (i + 1) / n)
}

// Rate is the segment's share of an open-loop rate: rate*(i+1)/n -
// rate*i/n, so that the n shares add up to rate (telescoping, to the last
// bit of a float64 in practice).
func (s Segment) Rate(rate float64) float64 {
	if !s.IsSet() {
		return rate
	}
	n := float64(s.Count)
	return rate*float64(s.Index+1)/n - rate*float64(s.Index)/n
}

type segmentFlag struct{ s *Segment }

func (f segmentFlag) String() string {
	if f.s == nil {
		return ""
	}
	return f.s.String()
}

func (f segmentFlag) Set(v string) error {
	s, err := parseSegment(v)
	if err != nil {
		return err
	}
	*f.s = s
	return nil
}

// splitsKeys reports whether the run's key space is split between the
// segments: when each worker has keys of its own (round-robin popularity,
// no contended workload). Keys that workers share by design (contended,
// uniform, zipf) stay shared by every segment, under one key prefix, so
// that workers of different processes contend as those of one process do.
func splitsKeys(c *Config) bool {
	return c.Workload != load.WorkloadContended && (c.KeyDist.Kind == "" || c.KeyDist.Kind == load.KeysRoundRobin)
}

// applySegment checks -segment against the other flags and turns the whole
// run's -rate, -c and -keys into this process's share of them (the whole
// run's figures are kept in c.SegmentOf).
func applySegment(c *Config) error {
	s := c.Segment
	if !s.IsSet() {
		return nil
	}
	switch {
	case len(c.Nodes) == 0:
		return usagef("-segment splits one cluster's load between processes: give its masters with -nodes (-fake and -real-local would start a cluster in every process)")
	case c.StartAt.IsZero():
		return usagef("-segment needs -start-at, the same for every segment: the processes' windows must line up for their logs to merge into the whole run's rate")
	case c.Workers < s.Count:
		return usagef("-segment %s: -c %d is the whole run's workers, split between the %d segments; give at least %d", s, c.Workers, s.Count, s.Count)
	case splitsKeys(c) && c.Keys < s.Count:
		return usagef("-segment %s: -keys %d is the whole run's key space, split between the %d segments; give at least %d", s, c.Keys, s.Count, s.Count)
	}
	c.SegmentOf = report.SegmentInfo{Index: s.Index, Count: s.Count, TotalRate: c.Rate, TotalWorkers: c.Workers, TotalKeys: c.Keys, KeysSplit: splitsKeys(c)}
	lo, hi := s.Range(c.Workers)
	c.Workers = hi - lo
	c.Rate = s.Rate(c.Rate)
	if c.SegmentOf.KeysSplit {
		lo, hi = s.Range(c.Keys)
		c.KeyFirst, c.Keys = lo, hi-lo
	}
	c.SegmentOf.KeyFirst = c.KeyFirst
	return nil
}

// segmentKeyPrefix is the key prefix every segment of one run shares (a
// run without -segment draws a random one): derived from -start-at, so
// that the segments' keys are ranges of one key space.
func segmentKeyPrefix(startAt time.Time) string {
	return fmt.Sprintf("redmux-bench:%012x:", uint64(startAt.UnixMilli()))
}

// segmentCommentPrefix starts the interval log's comment line that names
// the segment (#segment=i/n start_at=... total_rate=...): merge reads it.
const segmentCommentPrefix = "segment="

// segmentComment is that comment line's text (without '#').
func segmentComment(c *Config) string {
	s := c.SegmentOf
	return fmt.Sprintf("%s%d/%d start_at=%s total_rate=%s total_workers=%d total_keys=%d rate=%s workers=%d key_first=%d keys=%d keys_split=%t",
		segmentCommentPrefix, s.Index, s.Count, c.StartAt.UTC().Format(time.RFC3339Nano),
		strconv.FormatFloat(s.TotalRate, 'f', -1, 64), s.TotalWorkers, s.TotalKeys,
		strconv.FormatFloat(c.Rate, 'f', -1, 64), c.Workers, c.KeyFirst, c.Keys, s.KeysSplit)
}

// hlogSegment is what an interval log's header says of its segment.
type hlogSegment struct {
	seg       Segment
	startAt   string
	totalRate string
	totals    string // total_workers and total_keys, compared as given
}

// readHlogSegment reads the segment comment of an interval log's header
// (the comment lines before the first interval); ok is false for a log
// without one (a run without -segment).
func readHlogSegment(r io.Reader) (hs hlogSegment, ok bool, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "#") {
			if strings.HasPrefix(line, "\"StartTimestamp\"") {
				continue // the legend
			}
			break // the first interval: the header is over
		}
		if !strings.HasPrefix(line, "#"+segmentCommentPrefix) {
			continue
		}
		kv := map[string]string{}
		for _, f := range strings.Fields(line[1:]) {
			k, v, _ := strings.Cut(f, "=")
			kv[k] = v
		}
		seg, perr := parseSegment(kv["segment"])
		if perr != nil {
			return hs, false, fmt.Errorf("%w: segment line %q: %v", hlog.ErrBad, line, perr)
		}
		return hlogSegment{seg: seg, startAt: kv["start_at"], totalRate: kv["total_rate"],
			totals: "-c " + kv["total_workers"] + " -keys " + kv["total_keys"]}, true, nil
	}
	return hs, false, sc.Err()
}

// checkSegments checks the segments of the merged files: either none has
// one, or all are segments of one run (same n, same -start-at and totals),
// each segment at most once. A missing segment is a warning (the figures
// then cover only part of the run); a duplicate, a different n or a file
// without a segment among segments is an error (the figures would be
// wrong).
func checkSegments(files []string, segs []*hlogSegment) (*report.MergedSegments, []string, error) {
	var with, without []string
	for i, s := range segs {
		if s != nil {
			with = append(with, files[i])
		} else {
			without = append(without, files[i])
		}
	}
	if len(with) == 0 {
		return nil, nil, nil
	}
	if len(without) > 0 {
		return nil, nil, fmt.Errorf("%s have -segment and %s not: merge the segments of one run, or runs without -segment", strings.Join(with, ", "), strings.Join(without, ", "))
	}
	first := segs[0]
	ms := &report.MergedSegments{Count: first.seg.Count, StartAt: first.startAt}
	ms.TotalRate, _ = strconv.ParseFloat(first.totalRate, 64)
	seen := map[int]string{}
	var warns []string
	for i, s := range segs {
		if s.seg.Count != first.seg.Count {
			return nil, nil, fmt.Errorf("%s is segment %s and %s segment %s: segments of one run share n", files[0], first.seg, files[i], s.seg)
		}
		if prev, dup := seen[s.seg.Index]; dup {
			return nil, nil, fmt.Errorf("segment %s twice (%s and %s): its operations would be counted twice", s.seg, prev, files[i])
		}
		seen[s.seg.Index] = files[i]
		ms.Present = append(ms.Present, s.seg.Index)
		if s.startAt != first.startAt {
			warns = append(warns, fmt.Sprintf("%s started at %s, %s at %s: segments of one run share -start-at, or their windows do not line up", files[0], first.startAt, files[i], s.startAt))
		}
		if s.totalRate != first.totalRate || s.totals != first.totals {
			warns = append(warns, fmt.Sprintf("%s (-rate %s %s) and %s (-rate %s %s) split different runs: give every segment the same -rate, -c and -keys", files[0], first.totalRate, first.totals, files[i], s.totalRate, s.totals))
		}
	}
	sort.Ints(ms.Present)
	for i := 0; i < ms.Count; i++ {
		if _, ok := seen[i]; !ok {
			ms.Missing = append(ms.Missing, i)
		}
	}
	if len(ms.Missing) > 0 {
		var names []string
		for i, m := range ms.Missing {
			if i == 10 {
				names = append(names, fmt.Sprintf("... (%d in all)", len(ms.Missing)))
				break
			}
			names = append(names, fmt.Sprintf("%d/%d", m, ms.Count))
		}
		warns = append(warns, fmt.Sprintf("segments %s missing: the merged figures cover %d of %d shares of the run's rate, workers and keys", strings.Join(names, ", "), len(ms.Present), ms.Count))
	}
	return ms, warns, nil
}
