package checker

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/redmux/redmux/redlock"
)

// Note is one timed line of a violation's timeline.
type Note struct {
	At   time.Time
	What string
}

// FaultLog is implemented by injectors that log the faults they inject
// (the fake cluster's Chaos): the faults begun from from to to. A run
// that finds overlaps prints, for the first few, the claims of the
// resource, the clients' quarantines and these faults around them
// (Result.Timelines), so that a failure names its schedule.
type FaultLog interface {
	FaultsBetween(from, to time.Time) []Note
}

// timelineBefore is how far before the earlier claim a timeline begins:
// more than the longest TTL a checker run uses, so that the faults that
// cost the earlier holder its keys are in it.
const timelineBefore = 400 * time.Millisecond

// maxTimelines bounds Result.Timelines.
const maxTimelines = 4

// incLog is a client's log of its OpIncarnation events (quarantines).
type incEvent struct {
	at    time.Time
	node  int
	cause error
	left  time.Duration
}

// maxIncEvents bounds each client's incarnation log.
const maxIncEvents = 1 << 18

// noteInc logs an OpIncarnation event (called by Observe).
func (o *endCounter) noteInc(e redlock.Event) {
	o.mu.Lock()
	if len(o.incs) < maxIncEvents {
		o.incs = append(o.incs, incEvent{at: time.Now(), node: e.Node, cause: e.Err, left: e.Duration})
	}
	o.mu.Unlock()
}

// timelines builds Result.Timelines for rep's first samples.
func timelines(cfg *Config, rep Report, rec *Recorder, obs []*endCounter) []string {
	var out []string
	fl, _ := cfg.Faults.(FaultLog)
	for _, v := range rep.Samples {
		if len(out) == maxTimelines {
			break
		}
		ref := v.Earlier.Start
		from, to := ref.Add(-timelineBefore), v.Later.Start.Add(5*time.Millisecond)
		var notes []Note
		for _, iv := range rec.claims(v.Earlier.Resource, from, to) {
			notes = append(notes, Note{iv.Start, fmt.Sprintf("holder %d (client %d) claims %s until %+.3fms (%s) %s",
				iv.Holder, iv.Holder/max(cfg.WorkersPerClient, 1), iv.Resource, ms(iv.End.Sub(ref)), iv.Kind, iv.Note)})
		}
		for ci, o := range obs {
			o.mu.Lock()
			for _, e := range o.incs {
				if !e.at.Before(from) && !e.at.After(to) {
					notes = append(notes, Note{e.at, fmt.Sprintf("client %d quarantines node %d for %v: %v", ci, e.node, e.left, e.cause)})
				}
			}
			o.mu.Unlock()
		}
		if fl != nil {
			for _, f := range fl.FaultsBetween(from, to) {
				notes = append(notes, Note{f.At, "fault: " + f.What})
			}
		}
		sort.SliceStable(notes, func(i, j int) bool { return notes[i].At.Before(notes[j].At) })
		var b strings.Builder
		fmt.Fprintf(&b, "timeline of %q, times from holder %d's claim (%s) began:\n", v.Earlier.Resource, v.Earlier.Holder, v.Earlier.Kind)
		for _, n := range notes {
			fmt.Fprintf(&b, "  %+9.3fms %s\n", ms(n.At.Sub(ref)), n.What)
		}
		out = append(out, b.String())
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// claims returns resource's claims that began from from to to.
func (r *Recorder) claims(resource string, from, to time.Time) []Interval {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Interval
	for _, iv := range r.byRes[resource] {
		if !iv.Start.Before(from) && !iv.Start.After(to) {
			out = append(out, iv)
		}
	}
	return out
}

// keyNote says, for each node, whether it holds l's value for resource
// just after the acquisition: '+' (with its TTL), 'x' another value, '-'
// absent (a timeline's claims show it).
func keyNote(kl KeyLister, resource string, l redlock.Lock) string {
	vals, ttls := kl.KeyValues(resource)
	want := l.ValueArray()
	var b strings.Builder
	b.WriteString("key on nodes [")
	for i, v := range vals {
		if i > 0 {
			b.WriteByte(' ')
		}
		switch {
		case v == nil:
			b.WriteByte('-')
		case string(v) == string(want[:]):
			fmt.Fprintf(&b, "+%v", ttls[i].Round(100*time.Microsecond))
		default:
			b.WriteByte('x')
		}
	}
	b.WriteByte(']')
	return b.String()
}
