package bench

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Fault is one injected fault of the embedded cluster (-fault).
type Fault struct {
	Kind   string        // "slow", "down", "blackhole" or "cap"
	Node   int           // node index, 0-based
	Fixed  time.Duration // slow: added reply latency
	Jitter time.Duration // slow: extra uniform [0, Jitter)
	Rate   float64       // cap: commands per second the node serves
}

func (f Fault) String() string {
	s := f.Kind + ":" + strconv.Itoa(f.Node)
	if f.Kind == "cap" {
		return s + ":" + strconv.FormatFloat(f.Rate, 'f', -1, 64)
	}
	if f.Kind == "slow" {
		s += ":" + f.Fixed.String()
		if f.Jitter > 0 {
			s += ":" + f.Jitter.String()
		}
	}
	return s
}

// ParseFault parses "slow:<node>:<latency>[:<jitter>]", "down:<node>",
// "blackhole:<node>" or "cap:<node>:<commands/s>" (node indexes are
// 0-based).
func ParseFault(s string) (Fault, error) {
	p := strings.Split(s, ":")
	bad := func(why string) (Fault, error) {
		return Fault{}, fmt.Errorf("bad -fault %q: %s (want slow:<node>:<latency>[:<jitter>], down:<node>, blackhole:<node> or cap:<node>:<commands/s>)", s, why)
	}
	if len(p) < 2 {
		return bad("missing node")
	}
	f := Fault{Kind: p[0]}
	n, err := strconv.Atoi(p[1])
	if err != nil || n < 0 {
		return bad("node must be an index >= 0")
	}
	f.Node = n
	switch f.Kind {
	case "down", "blackhole":
		if len(p) != 2 {
			return bad("too many fields")
		}
	case "cap":
		if len(p) != 3 {
			return bad("cap needs a rate in commands per second")
		}
		if f.Rate, err = strconv.ParseFloat(p[2], 64); err != nil || !(f.Rate > 0 && f.Rate <= 1e9) {
			return bad("bad rate (commands per second, > 0)")
		}
	case "slow":
		if len(p) < 3 || len(p) > 4 {
			return bad("slow needs a latency")
		}
		if f.Fixed, err = time.ParseDuration(p[2]); err != nil || f.Fixed < 0 {
			return bad("bad latency")
		}
		if len(p) == 4 {
			if f.Jitter, err = time.ParseDuration(p[3]); err != nil || f.Jitter < 0 {
				return bad("bad jitter")
			}
		}
	default:
		return bad("unknown kind " + strconv.Quote(f.Kind))
	}
	return f, nil
}
