package report

import (
	"fmt"
	"sort"
	"time"

	"github.com/redmux/redmux/bench/internal/format"
)

// NodeOutage is one node's errors in a measured window: how many, and
// from when to when (seconds from the window's start, and UTC times).
type NodeOutage struct {
	Node   int     `json:"node"` // index in the configuration's nodes
	Addr   string  `json:"addr,omitempty"`
	Errors int64   `json:"errors"`
	FirstS float64 `json:"first_error_s"`
	LastS  float64 `json:"last_error_s"`
	First  string  `json:"first_error_at"`
	Last   string  `json:"last_error_at"`
}

// String is one outage for a reader: "node 2 (127.0.0.1:7002): 136724
// errors from 2.50s to 10.0s into the window (08:00:02.5Z to ...)".
func (o NodeOutage) String() string {
	addr := ""
	if o.Addr != "" {
		addr = " (" + o.Addr + ")"
	}
	return fmt.Sprintf("node %d%s: %s error(s) from %.2fs to %.2fs into the measured window (%s to %s)",
		o.Node, addr, format.Count(float64(o.Errors)), o.FirstS, o.LastS, ShortTime(o.First), ShortTime(o.Last))
}

// ShortTime is an RFC 3339 time to the millisecond.
func ShortTime(s string) string {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return s
	}
	return t.UTC().Format("15:04:05.000Z")
}

// outageLines are the warnings naming each strategy's failing nodes,
// the most errors first.
func outageLines(name string, out []NodeOutage) []string {
	o := append([]NodeOutage(nil), out...)
	sort.SliceStable(o, func(i, j int) bool { return o[i].Errors > o[j].Errors })
	var lines []string
	for _, x := range o {
		lines = append(lines, name+": "+x.String())
	}
	return lines
}
