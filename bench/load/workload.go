package load

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// Hold is the time a worker keeps a lock between acquiring and releasing
// it (-hold): none, fixed, uniform or exponential.
type Hold struct {
	Kind string        // "" (none), "fixed", "uniform", "exp"
	A    time.Duration // fixed: the time; uniform: the lower bound; exp: the mean
	B    time.Duration // uniform: the upper bound
}

func (h Hold) String() string {
	switch h.Kind {
	case "fixed":
		return h.A.String()
	case "uniform":
		return "uniform:" + h.A.String() + ":" + h.B.String()
	case "exp":
		return "exp:" + h.A.String()
	}
	return "0"
}

// Mean is the hold's expected value.
func (h Hold) Mean() time.Duration {
	switch h.Kind {
	case "fixed", "exp":
		return h.A
	case "uniform":
		return (h.A + h.B) / 2
	}
	return 0
}

// maxHold bounds every hold (a draw of the exponential is cut there too).
const maxHold = time.Minute

// draw returns one hold time.
func (h Hold) draw(r *rand.Rand) time.Duration {
	switch h.Kind {
	case "fixed":
		return h.A
	case "uniform":
		if h.B <= h.A {
			return h.A
		}
		return h.A + time.Duration(r.Int64N(int64(h.B-h.A)+1))
	case "exp":
		return time.Duration(math.Min(r.ExpFloat64()*float64(h.A), float64(maxHold)))
	}
	return 0
}

// ParseHold parses -hold: "0", a duration ("5ms": fixed), "uniform:1ms:5ms"
// or "exp:2ms" (exponential with that mean). A bad value's error says which
// form is expected and what is wrong with this one (min above max, a bad
// duration, a missing part).
func ParseHold(s string) (Hold, error) {
	bad := func(why string) error {
		return fmt.Errorf("bad -hold %q: %s; want a duration (5ms), uniform:<min>:<max> or exp:<mean>", s, why)
	}
	p := strings.Split(s, ":")
	switch {
	case s == "0" || s == "":
		return Hold{}, nil
	case len(p) == 1:
		d, why := holdDur("", p[0])
		if why != "" {
			return Hold{}, bad(why)
		}
		if d == 0 {
			return Hold{}, nil
		}
		return Hold{Kind: "fixed", A: d}, nil
	case p[0] == "uniform":
		if len(p) != 3 {
			return Hold{}, bad(fmt.Sprintf("uniform takes two durations, <min>:<max>, got %d", len(p)-1))
		}
		a, why := holdDur("min ", p[1])
		if why == "" {
			var b time.Duration
			b, why = holdDur("max ", p[2])
			switch {
			case why != "":
			case b < a:
				why = fmt.Sprintf("min %s is above max %s (write uniform:%s:%s)", a, b, p[2], p[1])
			case b == 0:
				why = "max is 0 (use 0 to release at once)"
			default:
				return Hold{Kind: "uniform", A: a, B: b}, nil
			}
		}
		return Hold{}, bad(why)
	case p[0] == "exp":
		if len(p) != 2 {
			return Hold{}, bad(fmt.Sprintf("exp takes one duration, <mean>, got %d", len(p)-1))
		}
		a, why := holdDur("mean ", p[1])
		if why == "" && a == 0 {
			why = "the mean is 0 (use 0 to release at once)"
		}
		if why != "" {
			return Hold{}, bad(why)
		}
		return Hold{Kind: "exp", A: a}, nil
	}
	return Hold{}, bad(fmt.Sprintf("unknown distribution %q (fixed durations have no prefix)", p[0]))
}

// holdDur parses one duration of -hold; why says what is wrong with it
// ("" when nothing is), naming it by what (e.g. "min ").
func holdDur(what, v string) (time.Duration, string) {
	d, err := time.ParseDuration(v)
	switch {
	case err != nil && v != "" && strings.Trim(v, "0123456789.") == "":
		return 0, fmt.Sprintf("%s%q has no unit (write %sms)", what, v, v)
	case err != nil:
		return 0, fmt.Sprintf("%s%q is not a duration", what, v)
	case d < 0:
		return 0, fmt.Sprintf("%s%s is negative", what, d)
	case d > maxHold:
		return 0, fmt.Sprintf("%s%s is above the longest hold, %s", what, d, maxHold)
	}
	return d, ""
}

// Key distributions (-keys-dist).
const (
	KeysRoundRobin = "round-robin" // each worker cycles over its own keys (shared when -keys < -c)
	KeysUniform    = "uniform"     // every operation draws a key uniformly from all of them
	KeysZipf       = "zipf"        // zipf:<s>: key k drawn with probability proportional to 1/(k+1)^s
)

// KeyDist is a key popularity distribution.
type KeyDist struct {
	Kind string  // KeysRoundRobin, KeysUniform or KeysZipf
	S    float64 // zipf exponent (> 1)
}

func (d KeyDist) String() string {
	if d.Kind == KeysZipf {
		return "zipf:" + strconv.FormatFloat(d.S, 'f', -1, 64)
	}
	if d.Kind == "" {
		return KeysRoundRobin
	}
	return d.Kind
}

// ParseKeyDist parses -keys-dist: round-robin, uniform or zipf:<s> with
// s > 1 (e.g. zipf:1.1; larger is more skewed).
func ParseKeyDist(s string) (KeyDist, error) {
	switch {
	case s == KeysRoundRobin || s == "":
		return KeyDist{Kind: KeysRoundRobin}, nil
	case s == KeysUniform:
		return KeyDist{Kind: KeysUniform}, nil
	case strings.HasPrefix(s, KeysZipf+":"):
		v, err := strconv.ParseFloat(s[len(KeysZipf)+1:], 64)
		if err == nil && v > 1 && v <= 100 {
			return KeyDist{Kind: KeysZipf, S: v}, nil
		}
	}
	return KeyDist{}, fmt.Errorf("bad -keys-dist %q: want round-robin, uniform or zipf:<s> with s > 1 (e.g. zipf:1.1)", s)
}

// keyPicker draws a worker's keys; one per worker (not safe for
// concurrent use), allocation-free per draw.
type keyPicker struct {
	dist KeyDist
	n    int
	r    *rand.Rand
	z    *rand.Zipf
}

func newKeyPicker(d KeyDist, n int, r *rand.Rand) *keyPicker {
	p := &keyPicker{dist: d, n: n, r: r}
	if d.Kind == KeysZipf && n > 1 {
		p.z = rand.NewZipf(r, d.S, 1, uint64(n-1))
	}
	return p
}

// pick returns the index of the key for a worker's k-th operation (closed
// loop) or the run's i-th (open loop, open true).
func (p *keyPicker) pick(wi, k, workers int, i int64, open bool) int {
	switch p.dist.Kind {
	case KeysUniform:
		return p.r.IntN(p.n)
	case KeysZipf:
		if p.z == nil {
			return 0
		}
		return int(p.z.Uint64())
	}
	if open {
		return int(i % int64(p.n))
	}
	return keyIndex(wi, k, workers, p.n)
}
