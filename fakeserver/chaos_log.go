package fakeserver

import (
	"fmt"
	"time"
)

// ChaosEvent is one fault a Chaos injected: when it began, on which node
// (its index in the cluster), and what it was.
type ChaosEvent struct {
	At   time.Time
	Node int
	What string
}

func (e ChaosEvent) String() string { return fmt.Sprintf("node %d: %s", e.Node, e.What) }

// maxChaosEvents bounds the log (about 300,000 faults in an hour's run).
const maxChaosEvents = 1 << 20

// note logs a fault on n (dropped past maxChaosEvents).
func (ch *Chaos) note(n *Node, format string, args ...any) {
	i := -1
	for k, m := range ch.cl.Nodes {
		if m == n {
			i = k
			break
		}
	}
	e := ChaosEvent{At: time.Now(), Node: i, What: fmt.Sprintf(format, args...)}
	ch.logMu.Lock()
	if len(ch.log) < maxChaosEvents {
		ch.log = append(ch.log, e)
	}
	ch.logMu.Unlock()
}

// Events returns the faults injected from from to to, in the order they
// began: what a failed safety check prints beside the claims it found
// overlapping.
func (ch *Chaos) Events(from, to time.Time) []ChaosEvent {
	ch.logMu.Lock()
	defer ch.logMu.Unlock()
	var out []ChaosEvent
	for _, e := range ch.log {
		if !e.At.Before(from) && !e.At.After(to) {
			out = append(out, e)
		}
	}
	return out
}
