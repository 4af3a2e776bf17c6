package bench

import (
	"sync"
	"time"

	"github.com/redmux/redmux/bench/internal/report"
	"github.com/redmux/redmux/bench/load"
)

// nodeTally is one worker's errors per node (indexed as the target's
// addresses), with the times of the first and the last: which node
// failed, and when (issue 48 item 4). Only failures touch it.
type nodeTally []nodeStat

type nodeStat struct {
	errors      int64
	first, last time.Time
}

// note counts an error of node i now.
func (t nodeTally) note(i int) {
	if i < 0 || i >= len(t) {
		return
	}
	now := time.Now()
	s := &t[i]
	if s.errors == 0 {
		s.first = now
	}
	s.errors++
	s.last = now
}

// nodeTallier is a worker that tallies its errors per node.
type nodeTallier interface{ nodeTally() nodeTally }

// resetNodeTallies clears the workers' tallies (before a measured phase:
// the workers are idle then).
func resetNodeTallies(workers []load.Worker) {
	for _, w := range workers {
		if nt, ok := w.(nodeTallier); ok {
			clear(nt.nodeTally())
		}
	}
}

// nodeOutages sums the workers' tallies per node, the nodes that had no
// error left out; start is the measured window's start.
func nodeOutages(workers []load.Worker, start time.Time) []report.NodeOutage {
	var sum []nodeStat
	for _, w := range workers {
		nt, ok := w.(nodeTallier)
		if !ok {
			continue
		}
		t := nt.nodeTally()
		if len(sum) < len(t) {
			sum = append(sum, make([]nodeStat, len(t)-len(sum))...)
		}
		for i, s := range t {
			if s.errors == 0 {
				continue
			}
			a := &sum[i]
			if a.errors == 0 || s.first.Before(a.first) {
				a.first = s.first
			}
			if s.last.After(a.last) {
				a.last = s.last
			}
			a.errors += s.errors
		}
	}
	var out []report.NodeOutage
	for i, s := range sum {
		if s.errors == 0 {
			continue
		}
		out = append(out, report.NodeOutage{Node: i, Errors: s.errors,
			FirstS: max(0, s.first.Sub(start).Seconds()), LastS: max(0, s.last.Sub(start).Seconds()),
			First: s.first.UTC().Format(time.RFC3339Nano), Last: s.last.UTC().Format(time.RFC3339Nano)})
	}
	return out
}

// nameOutages gives each outage its node's address (as the report shows
// it: no password).
func nameOutages(out []report.NodeOutage, nodes []string) {
	for i := range out {
		if n := out[i].Node; n >= 0 && n < len(nodes) {
			out[i].Addr = nodes[n]
		}
	}
}

// nodeErrCounts is a worker's node errors by kind (Worker.NodeErrors).
// Only failures touch it; its lock lets the live view (-metrics-addr) read
// it while the worker runs.
type nodeErrCounts struct {
	mu sync.Mutex
	m  map[string]int64
}

func (c *nodeErrCounts) add(kind string, n int64) {
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]int64{}
	}
	c.m[kind] += n
	c.mu.Unlock()
}

// snapshot is a copy of the counts.
func (c *nodeErrCounts) snapshot() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := make(map[string]int64, len(c.m))
	for k, v := range c.m {
		m[k] = v
	}
	return m
}

// nodeErrCounter is a worker whose node errors can be read while it runs.
type nodeErrCounter interface{ nodeErrCounts() *nodeErrCounts }
