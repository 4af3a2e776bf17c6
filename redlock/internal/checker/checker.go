// Package checker is redlock's safety checker: it records, per lock holder,
// the interval during which the holder believed it held a lock (from the
// moment the acquisition was confirmed to the end of its validity, or to
// the moment it started releasing, whichever came first), all on this
// process's monotonic clock, and reports every pair of holders of one
// resource whose intervals overlap. Run drives many redlock clients against
// a cluster while an injector adds faults, and feeds the Recorder.
package checker

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// Interval is one holding of a lock.
type Interval struct {
	Resource string
	Holder   int       // worker id
	Start    time.Time // acquisition confirmed (carries a monotonic reading)
	End      time.Time // end of validity, or release start if earlier
}

// Violation is a holding that began while another holding of the same
// resource was still valid.
type Violation struct {
	Earlier, Later Interval
	Overlap        time.Duration
}

func (v Violation) String() string {
	return fmt.Sprintf("%q: holder %d began %v before holder %d's validity ended",
		v.Earlier.Resource, v.Later.Holder, v.Overlap, v.Earlier.Holder)
}

// Recorder collects intervals. It is safe for concurrent use.
type Recorder struct {
	mu    sync.Mutex
	byRes map[string][]Interval
	n     int
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder { return &Recorder{byRes: make(map[string][]Interval)} }

// Record adds a holding. start and end must come from time.Now (or be
// derived from such values with Add), so that they carry monotonic readings.
// An empty interval (end not after start) is kept but cannot overlap.
func (r *Recorder) Record(resource string, holder int, start, end time.Time) {
	r.mu.Lock()
	r.byRes[resource] = append(r.byRes[resource], Interval{resource, holder, start, end})
	r.n++
	r.mu.Unlock()
}

// Len returns how many intervals were recorded.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// Report is the result of Check.
type Report struct {
	Intervals  int
	Resources  int
	Violations int           // holdings that began inside another's validity
	MaxOverlap time.Duration // largest overlap seen
	Samples    []Violation   // the first few violations, for the test log
}

// MaxSamples bounds Report.Samples.
const MaxSamples = 20

// Check sorts each resource's intervals by start and sweeps them, keeping
// the interval with the latest end so far: any interval that starts before
// that end overlaps it. It is O(n log n).
func (r *Recorder) Check() Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	rep := Report{Intervals: r.n, Resources: len(r.byRes)}
	for _, list := range r.byRes {
		s := append([]Interval(nil), list...)
		sort.Slice(s, func(i, j int) bool { return s[i].Start.Before(s[j].Start) })
		cur := -1 // index of the interval with the latest end so far
		for i := range s {
			if !s[i].End.After(s[i].Start) {
				continue
			}
			if cur >= 0 && s[i].Start.Before(s[cur].End) {
				ov := s[cur].End.Sub(s[i].Start)
				rep.Violations++
				if ov > rep.MaxOverlap {
					rep.MaxOverlap = ov
				}
				if len(rep.Samples) < MaxSamples {
					rep.Samples = append(rep.Samples, Violation{s[cur], s[i], ov})
				}
			}
			if cur < 0 || s[i].End.After(s[cur].End) {
				cur = i
			}
		}
	}
	return rep
}

func (rep Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d intervals on %d resources, %d violations", rep.Intervals, rep.Resources, rep.Violations)
	if rep.Violations > 0 {
		fmt.Fprintf(&b, " (max overlap %v)", rep.MaxOverlap)
		for i, v := range rep.Samples {
			if i == 3 {
				break
			}
			b.WriteString("; ")
			b.WriteString(v.String())
		}
	}
	return b.String()
}
