// Package checker is redlock's safety checker. It drives many redlock
// clients against a cluster while an Injector adds faults and a hook stalls
// holders mid-acquire and mid-extend, and records a history:
//
//   - Claims: each holding of a lock is one or more intervals during which
//     its holder believed it held the lock, on this process's monotonic
//     clock: from the moment Acquire returned to the end of the validity it
//     reported, cut where the holder began an Extend or a Release; each
//     successful extension is a new interval from the moment the Extend
//     call began to the new end; after a failed extension the holder claims
//     what Validity reports, from the moment Extend returned. Claims of
//     different holdings of one resource must never overlap.
//   - Contracts, checked against the pause hook's clock readings (which the
//     library's own readings can only follow): Acquire never returns a lock
//     whose validity had ended before the library read its clock after the
//     replies; Extend never succeeds when the old validity had ended by
//     then; after a failed Extend the validity is at most the old end (the
//     nodes never shorten a key); a Release's replies are
//     integers or node-level failures, never another command's reply.
//   - Keep-alive (kept-alive holders that also Extend themselves): the
//     keep-alive's end of validity is always the lock's, and its context
//     is cancelled before an Extend that says lost or expired returns.
//   - Keys outlive the validity (EndCheckRate, on a cluster it can read
//     directly): a node that held a holding's key, up and in the same
//     incarnation, still holds it just before the claimed end.
//   - Keep-alive end reports, per lock (Event.LockID): at most one, and one
//     for every keep-alive its holder saw end by itself.
//   - Release: a Release that says the lock was retained (not confirmed
//     by a quorum) leaves it held; any other leaves it not held.
//   - Availability (Leftovers): once every holder released, no lock key is
//     left on any node, also when attempts ended by their ctx's deadline
//     or cancellation and releases were called with an ended ctx.
package checker

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// Interval is one claim of a holding.
type Interval struct {
	Resource string
	Holder   int       // worker id
	Holding  int64     // one acquisition and its extensions share this
	Start    time.Time // carries a monotonic reading
	End      time.Time // end of the claimed validity, or where it was cut
	Kind     string    // what the claim follows (acquired, extended, ...), for reports
	Note     string    // which nodes held the key just after the acquisition, for timelines
}

// Violation is a claim that began while a claim of another holding of the
// same resource was still valid.
type Violation struct {
	Earlier, Later Interval
	Overlap        time.Duration
}

func (v Violation) String() string {
	return fmt.Sprintf("%q: holder %d began %v (%s) before holder %d's validity ended (%s, claimed %v)",
		v.Earlier.Resource, v.Later.Holder, v.Overlap, v.Later.Kind, v.Earlier.Holder, v.Earlier.Kind, v.Earlier.End.Sub(v.Earlier.Start).Round(time.Microsecond))
}

// Contract names a contract check.
type Contract int

const (
	// NoValidity: Acquire returned a lock whose validity had ended
	// before the library read its clock after the SET replies.
	NoValidity Contract = iota
	// LateExtension: Extend succeeded although the old validity had ended
	// before the library read its clock after the replies.
	LateExtension
	// FailedExtendTooLong: after a failed Extend the lock reports a
	// validity beyond the old end.
	FailedExtendTooLong
	// BadReply: a Release got a reply that is not the integer its
	// compare-and-delete returns, nor a node-level failure (timeout,
	// pending, not sent, connection down): the symptom of a reply matched
	// to the wrong command.
	BadReply
	// KeepAliveStale: a kept-alive lock whose keep-alive state holds
	// another end of validity than the lock (read while no extension is in
	// flight): keep-alive and Validity disagree, e.g. after an Extend by
	// the holder that the keep-alive did not follow, so the keep-alive
	// context would outlive the validity or the next extension come late.
	KeepAliveStale
	// KeepAliveOutlived: a kept-alive holder's own Extend returned
	// ErrLockLost or ErrLockExpired and the keep-alive context was still
	// live.
	KeepAliveOutlived
	// ReleaseContract: a Release that said the lock was retained (not
	// confirmed by a quorum) while the lock was not held, or one that returned
	// otherwise and left the lock held.
	ReleaseContract
	// StaleWrite: with fencing, the fenced store accepted a write from a
	// holding after a newer holding's write (its token was not lower).
	StaleWrite
	// TokenRegression: with fencing, a holding granted after the holding
	// that wrote the highest token has a token that is not higher.
	TokenRegression
	// ExtendTooLong: after a successful Extend the lock reports a validity
	// beyond hook + ttl - drift (the new validity must be counted from the
	// start of the call, before the replies).
	ExtendTooLong
	// KeepAliveEndReport: per lock (Event.LockID), a client's observer was
	// told of a keep-alive end (OpKeepAliveEnd) more than once, or for a
	// lock not kept alive, or of none for a keep-alive whose holder saw it
	// end by itself, or not as lost when the holder saw it lost or expired
	// (checked once the clients are closed: every end is reported by then).
	KeepAliveEndReport
	// KeyExpiredEarly: a node that held a holding's key (up and in one
	// incarnation throughout) no longer held it before the end of the
	// validity Acquire gave (EndCheckRate): the validity outlived a key.
	KeyExpiredEarly
	numContracts
)

var contractNames = [numContracts]string{"no-validity", "late-extension", "failed-extend-too-long", "bad-reply",
	"keepalive-stale", "keepalive-outlived", "release-contract", "stale-write", "token-regression", "extend-too-long",
	"keepalive-end-report", "key-expired-early"}

func (c Contract) String() string {
	if c >= 0 && c < numContracts {
		return contractNames[c]
	}
	return fmt.Sprintf("contract(%d)", int(c))
}

// Recorder collects claims and contract violations. It is safe for
// concurrent use.
type Recorder struct {
	mu       sync.Mutex
	byRes    map[string][]Interval
	n        int
	holdings int64
	contract [numContracts]int
	cSamples []string
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder { return &Recorder{byRes: make(map[string][]Interval)} }

// NewHolding returns a fresh holding id.
func (r *Recorder) NewHolding() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.holdings++
	return r.holdings
}

// Record adds a holding made of one claim. start and end must come from
// time.Now (or be derived from such values with Add), so that they carry
// monotonic readings. An empty claim (end not after start) is kept but
// cannot overlap.
func (r *Recorder) Record(resource string, holder int, start, end time.Time) {
	r.Add(Interval{Resource: resource, Holder: holder, Holding: r.NewHolding(), Start: start, End: end})
}

// Add adds one claim of a holding (see NewHolding).
func (r *Recorder) Add(iv Interval) {
	r.mu.Lock()
	r.byRes[iv.Resource] = append(r.byRes[iv.Resource], iv)
	r.n++
	r.mu.Unlock()
}

// Broke records a contract violation with a description.
func (r *Recorder) Broke(c Contract, format string, args ...any) {
	r.mu.Lock()
	r.contract[c]++
	if len(r.cSamples) < MaxSamples {
		r.cSamples = append(r.cSamples, c.String()+": "+fmt.Sprintf(format, args...))
	}
	r.mu.Unlock()
}

// Len returns how many claims were recorded.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// Report is the result of Check.
type Report struct {
	Intervals  int
	Resources  int
	Violations int           // claims that began inside another holding's claim
	MaxOverlap time.Duration // largest overlap seen
	Samples    []Violation   // the first few overlaps, for the test log

	Contracts       [numContracts]int // contract violations by kind
	ContractSamples []string

	Leftovers []string // lock keys left on nodes after every holder released (Leftovers run)
}

// Broken returns the number of contract violations.
func (rep Report) Broken() int {
	n := 0
	for _, c := range rep.Contracts {
		n += c
	}
	return n
}

// Total is every violation: overlaps, contracts and leftover keys.
func (rep Report) Total() int { return rep.Violations + rep.Broken() + len(rep.Leftovers) }

// MaxSamples bounds Report.Samples and Report.ContractSamples.
const MaxSamples = 20

// Check sorts each resource's claims by start and sweeps them, keeping the
// two latest-ending claims of different holdings: a claim that starts
// before the latest end of another holding overlaps it. O(n log n).
func (r *Recorder) Check() Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	rep := Report{Intervals: r.n, Resources: len(r.byRes), Contracts: r.contract}
	rep.ContractSamples = append([]string(nil), r.cSamples...)
	for _, list := range r.byRes {
		s := append([]Interval(nil), list...)
		sort.Slice(s, func(i, j int) bool { return s[i].Start.Before(s[j].Start) })
		best, second := -1, -1 // latest end so far; latest end of another holding
		for i := range s {
			if !s[i].End.After(s[i].Start) {
				continue
			}
			other := best
			if best >= 0 && s[best].Holding == s[i].Holding {
				other = second
			}
			if other >= 0 && s[i].Start.Before(s[other].End) {
				ov := s[other].End.Sub(s[i].Start)
				rep.Violations++
				if ov > rep.MaxOverlap {
					rep.MaxOverlap = ov
				}
				if len(rep.Samples) < MaxSamples {
					rep.Samples = append(rep.Samples, Violation{s[other], s[i], ov})
				}
			}
			switch {
			case best < 0 || s[i].End.After(s[best].End):
				if best >= 0 && s[best].Holding != s[i].Holding {
					second = best
				}
				best = i
			case s[best].Holding != s[i].Holding && (second < 0 || s[i].End.After(s[second].End)):
				second = i
			}
		}
	}
	return rep
}

func (rep Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d claims on %d resources, %d overlaps", rep.Intervals, rep.Resources, rep.Violations)
	if rep.Violations > 0 {
		fmt.Fprintf(&b, " (max overlap %v)", rep.MaxOverlap)
	}
	for c, n := range rep.Contracts {
		fmt.Fprintf(&b, ", %d %v", n, Contract(c))
	}
	if rep.Leftovers != nil {
		fmt.Fprintf(&b, ", %d leftover keys", len(rep.Leftovers))
	}
	for i, v := range rep.Samples {
		if i == 3 {
			break
		}
		b.WriteString("; ")
		b.WriteString(v.String())
	}
	for i, s := range rep.ContractSamples {
		if i == 3 {
			break
		}
		b.WriteString("; ")
		b.WriteString(s)
	}
	for i, s := range rep.Leftovers {
		if i == 5 {
			fmt.Fprintf(&b, "; ... %d more", len(rep.Leftovers)-5)
			break
		}
		b.WriteString("; leftover ")
		b.WriteString(s)
	}
	return b.String()
}

// Summary is one machine-readable line for the mutation runner.
func (rep Report) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "CHECKER-SUMMARY overlaps=%d", rep.Violations)
	for c, n := range rep.Contracts {
		fmt.Fprintf(&b, " %v=%d", Contract(c), n)
	}
	fmt.Fprintf(&b, " leftovers=%d", len(rep.Leftovers))
	return b.String()
}
