package redlock

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redmux/redmux/mux"
)

// Errors. Compare with errors.Is; the typed errors below match the
// sentinels they describe.
var (
	// ErrNotAcquired: the lock was not acquired (tries exhausted, context
	// done, or the client closed). Matched by every *NotAcquiredError.
	ErrNotAcquired = errors.New("redlock: lock not acquired")
	// ErrValidityTooShort: a quorum granted the lock, but too little of the
	// TTL was left after the elapsed time and the drift allowance (or less
	// than WithMinValidity). The grants were released.
	ErrValidityTooShort = errors.New("redlock: validity too short")
	// ErrLockLost: the nodes no longer hold the lock's value on a quorum
	// (it expired early on the nodes, was deleted, or a node lost its data).
	ErrLockLost = errors.New("redlock: lock lost")
	// ErrLockExpired: the lock's validity ended before the operation could
	// be confirmed. The holder must stop: another client may hold it.
	ErrLockExpired = errors.New("redlock: lock validity expired")
	// ErrExtendUnknown: an Extend ended (ctx cancelled or past its
	// deadline, node timeouts, failures) before a quorum confirmed, yet no
	// quorum refused and the validity had not ended: the lock may still be
	// held, for what Validity reports (never more than before the call).
	// Extend again, or stop before Validity reaches 0.
	ErrExtendUnknown = errors.New("redlock: extend outcome unknown")
	// ErrFencingUnknown: a fenced acquisition (WithFencing) was granted,
	// but a node's fencing counter for the resource is not an integer (not
	// written by redlock), so no safe token could be computed; the grant
	// was released. Matched by a *NotAcquiredError whose FencingUnknown is
	// set.
	ErrFencingUnknown = errors.New("redlock: fencing counter unreadable")
	// ErrExtendLimit: the lock has been extended WithMaxExtensions times.
	ErrExtendLimit = errors.New("redlock: extension limit reached")
	// ErrReleasePartial: some nodes did not confirm the release, and fewer
	// than a quorum did (or WithStrictRelease). Matched by *ReleaseError.
	// Their keys expire by themselves after the TTL.
	ErrReleasePartial = errors.New("redlock: release partly failed")
	// ErrNotHeld: the Lock is the zero value or was already released.
	ErrNotHeld = errors.New("redlock: lock not held")
	// ErrBadOption: an option or argument is invalid.
	ErrBadOption = errors.New("redlock: invalid option")
	// ErrClosed: the client was closed.
	ErrClosed = errors.New("redlock: client closed")
	// ErrUnreachable: in an acquisition attempt so many nodes were down
	// (not connected: connection refused, dial or set-up failed) or
	// refused authentication (WRONGPASS, NOAUTH) that no quorum was
	// possible. Acquire does not retry then: it fails at once with the
	// nodes' causes. Matched by a *NotAcquiredError whose Unreachable is
	// set.
	ErrUnreachable = errors.New("redlock: quorum unreachable")
)

// errStaleCounter is a node's error in a fenced attempt whose grant there
// did not count: its fencing counter was written by another incarnation of
// the node, or is not a counter (docs/FENCING.md).
// errFencedForm: a fenced single lock's three answers were not of the
// forms its commands answer (a node that is no Redis, or a version that
// answers otherwise).
var errFencedForm = errors.New("redlock: unexpected answer to a fenced lock's commands (ZADD, SET, ZREVRANGE)")

// errFencingIncUnknown is a node's error in a fenced attempt whose grant
// there did not count because the node's incarnation is unknown (it
// refuses INFO): its failovers cannot be told (docs/FENCING.md).
var errFencingIncUnknown = errors.New("redlock: fencing counter unusable: the node's incarnation is unknown (it refuses INFO), so a failover that replaced its counter with an older copy could not be told; fencing needs nodes that answer INFO")

var errStaleCounter = errors.New("redlock: fencing counter stale (written by another incarnation of the node, or not a counter): re-seeded by the next grant that reads a quorum of current ones")

// Messages. Every error of this package starts with "redlock: ", once: a
// cause from this package is added without its prefix, a cause from
// another package (mux's "mux: node down: ...") keeps its own, which says
// where it came from. One fact gets one message (a closed client is
// ErrClosed, not ErrClosed wrapping mux.ErrClosed).

// causeText is err's message without this package's prefix.
func causeText(err error) string { return strings.TrimPrefix(err.Error(), "redlock: ") }

// opError is "redlock: <op>: <cause>", wrapping cause.
type opError struct {
	op  string
	err error
}

func (e *opError) Error() string { return "redlock: " + e.op + ": " + causeText(e.err) }
func (e *opError) Unwrap() error { return e.err }

func wrapOp(op, resource string, err error) error {
	return &opError{op: op + " " + strconv.Quote(resource), err: err}
}

// NodeStatus is what one node answered in an attempt.
type NodeStatus uint8

// Node statuses.
const (
	NodeGranted NodeStatus = iota + 1 // answered OK: the node holds the value
	NodeRefused                       // answered nil: another value holds the resource there
	NodeFailed                        // an error reply, down, broken connection (Err says which)
	NodePending                       // no answer when the attempt ended (Err: mux.ErrTimeout, or mux.ErrPending once the outcome was known)
)

func (s NodeStatus) String() string {
	switch s {
	case NodeGranted:
		return "granted"
	case NodeRefused:
		return "refused"
	case NodeFailed:
		return "failed"
	case NodePending:
		return "pending"
	}
	return "unknown"
}

// NodeResult is one node's part in an acquisition attempt.
type NodeResult struct {
	Node   int        // index in the client's addresses
	Addr   string     // the node's address (never a password)
	Status NodeStatus //
	Err    error      // why, for NodeFailed (a *mux.NodeError, *mux.ServerError, ...) and NodePending
}

func (r NodeResult) String() string {
	s := "node " + strconv.Itoa(r.Node) + " (" + r.Addr + ") " + r.Status.String()
	if r.Err != nil {
		s += ": " + causeText(r.Err)
	}
	return s
}

// unreachable reports whether a node's error means it cannot take part
// until an operator or a redial fixes it: not connected (down, refused,
// set-up failed) or refusing authentication. Timeouts are not: a slow or
// partitioned node may answer the next attempt.
func unreachable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, mux.ErrNodeDown) || errors.Is(err, mux.ErrAuth) {
		return true
	}
	var se *mux.ServerError
	return errors.As(err, &se) && (strings.HasPrefix(se.Text, "NOAUTH") || strings.HasPrefix(se.Text, "WRONGPASS"))
}

// NotAcquiredError reports a failed Acquire or TryAcquire: the counts and
// Nodes are those of the last attempt. errors.Is(err, ErrNotAcquired) is
// true; errors.Is(err, ErrValidityTooShort) is true when the last attempt
// reached the quorum but not enough validity; errors.Is(err,
// ErrUnreachable) when Acquire gave up at once because a majority was down
// or refused authentication. The cause (a context error, ErrClosed) and
// every failed or timed-out node's error (mux.ErrAuth, mux.ErrNodeDown,
// mux.ErrTimeout, a *mux.ServerError, ...) are reachable with errors.Is/As.
type NotAcquiredError struct {
	Resource    string
	Tries       int  // attempts made
	Granted     int  // nodes that answered OK to SET NX in the last attempt
	Refused     int  // nodes that answered nil: the resource was locked there
	Failed      int  // nodes that answered an error, were down or broke the connection
	Pending     int  // nodes that had not answered when the call ended (timed out, or not needed once the outcome was known)
	Quarantined int  // of Failed: nodes that answered OK but are quarantined after a restart or failover (docs/OPERATIONS.md); their Nodes entry says for how long
	TooShort    bool // the last attempt had a quorum but too little validity
	Unreachable bool // more than N-quorum nodes down or refusing authentication: not retried
	// FencingUnknown: the last attempt was granted but no safe fencing
	// token could be computed (ErrFencingUnknown); FenceFailed: it was
	// granted, but the token's write-back did not reach a quorum within
	// the validity (WithFencing).
	FencingUnknown, FenceFailed bool
	Nodes                       []NodeResult // the last attempt, per node (nil if no attempt reached the nodes)
	Err                         error        // what ended the retries, if not the nodes' answers (ctx, ErrClosed, the value source)
}

func (e *NotAcquiredError) Error() string {
	var b strings.Builder
	b.WriteString("redlock: lock ")
	b.WriteString(strconv.Quote(e.Resource))
	b.WriteString(" not acquired after ")
	b.WriteString(strconv.Itoa(e.Tries))
	if e.Tries == 1 {
		b.WriteString(" try (")
	} else {
		b.WriteString(" tries (")
	}
	if e.Tries > 0 {
		b.WriteString("last: ")
	}
	fmt.Fprintf(&b, "%d granted, %d refused, %d failed", e.Granted, e.Refused, e.Failed)
	if e.Quarantined > 0 {
		fmt.Fprintf(&b, " (%d quarantined)", e.Quarantined)
	}
	fmt.Fprintf(&b, ", %d pending", e.Pending)
	if e.TooShort {
		b.WriteString(", validity too short")
	}
	if e.FencingUnknown {
		b.WriteString(", fencing counter unreadable")
	}
	if e.FenceFailed {
		b.WriteString(", fencing token write-back short of the quorum")
	}
	b.WriteString(")")
	if e.Unreachable {
		b.WriteString(": quorum unreachable")
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(causeText(e.Err))
	}
	// the failed nodes' causes: the first in full, then how many more
	// failed with a different message
	var first string
	more := 0
	for _, n := range e.Nodes {
		if n.Status != NodeFailed || n.Err == nil {
			continue
		}
		if first == "" {
			first = causeText(n.Err)
			b.WriteString(": ")
			var ne *mux.NodeError
			var se *mux.ServerError
			var qe *QuarantineError
			if errors.As(n.Err, &ne) || errors.As(n.Err, &se) || errors.As(n.Err, &qe) {
				b.WriteString(first) // names the node itself
			} else {
				b.WriteString(n.String())
			}
		} else {
			more++
		}
	}
	if more > 0 {
		fmt.Fprintf(&b, " (and %d more failed node", more)
		if more > 1 {
			b.WriteString("s")
		}
		b.WriteString(")")
	}
	return b.String()
}

// Is reports whether target is ErrNotAcquired, ErrValidityTooShort for an
// attempt that failed on validity, or ErrUnreachable.
func (e *NotAcquiredError) Is(target error) bool {
	return target == ErrNotAcquired || (e.TooShort && target == ErrValidityTooShort) ||
		(e.Unreachable && target == ErrUnreachable) || (e.FencingUnknown && target == ErrFencingUnknown)
}

// Unwrap returns the cause, if any, and the failed and timed-out nodes'
// errors of the last attempt.
func (e *NotAcquiredError) Unwrap() []error {
	var out []error
	if e.Err != nil {
		out = append(out, e.Err)
	}
	for _, n := range e.Nodes {
		if n.Err != nil && n.Err != mux.ErrPending {
			out = append(out, n.Err)
		}
	}
	return out
}

// ExtendError reports a failed Extend, with what is known: Lost when more
// than N-quorum nodes refused (they no longer hold the value: the lock is
// lost, Validity is 0), Expired when the validity ended before a quorum
// confirmed; neither when the call ended first (ctx, timeouts, failures)
// and the lock may still be held for what Validity reports. It matches
// ErrLockLost when Lost, ErrLockExpired when Expired, ErrExtendUnknown
// when neither. After it the Lock's validity is never longer than before
// the call (shorter if the lock is known lost or the new TTL was shorter:
// some nodes may have applied it).
type ExtendError struct {
	Resource string
	Extended int  // nodes that extended the TTL
	Refused  int  // nodes that no longer hold the lock's value
	Failed   int  // nodes that answered an error, were down, broke the connection or were not sent the command
	Pending  int  // nodes that had not answered when the call ended (timed out, or not needed once the outcome was known)
	Lost     bool // more than N-quorum nodes refused: the quorum no longer holds the value
	Expired  bool // validity ended before a quorum confirmed
	Err      error
}

func (e *ExtendError) Error() string {
	what := "outcome unknown, validity remains"
	switch {
	case e.Lost && e.Expired:
		what = "lock lost and expired"
	case e.Lost:
		what = "lock lost"
	case e.Expired:
		what = "lock expired"
	}
	s := fmt.Sprintf("redlock: extend %q failed, %s (%d extended, %d refused, %d failed, %d pending)",
		e.Resource, what, e.Extended, e.Refused, e.Failed, e.Pending)
	if e.Err != nil {
		s += ": " + causeText(e.Err)
	}
	return s
}

// Is matches ErrLockLost when Lost, ErrLockExpired when Expired, and
// ErrExtendUnknown when neither.
func (e *ExtendError) Is(target error) bool {
	switch target {
	case ErrLockLost:
		return e.Lost
	case ErrLockExpired:
		return e.Expired
	case ErrExtendUnknown:
		return !e.Lost && !e.Expired
	}
	return false
}

// Unwrap returns the cause, if any.
func (e *ExtendError) Unwrap() error { return e.Err }

// ReleaseError reports the nodes that did not confirm a release (error
// reply, timeout, down). errors.Is(err, ErrReleasePartial) is true, and each
// node's error is reachable through Errs; errors.Is(err, ErrLockExpired)
// too when the validity had already ended at the Release. When Retained is
// set fewer than the quorum of nodes confirmed the release (down, not
// connected, timed out, partitioned: a release sent but unanswered may
// never have reached the node) and the lock is still held, with no
// validity left: Release again.
type ReleaseError struct {
	Resource string
	Released int   // nodes that deleted the key
	Failed   []int // node indices that did not answer with an integer
	Errs     []error
	Expired  bool // the validity had ended before Release was called
	Retained bool // confirmed by fewer than the quorum: the lock is still held, Validity 0 (Release again)
}

func (e *ReleaseError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "redlock: release %q partly failed (%d released; failed nodes %v", e.Resource, e.Released, e.Failed)
	if len(e.Errs) > 0 && e.Errs[0] != nil {
		b.WriteString("; first: ")
		b.WriteString(causeText(e.Errs[0]))
	}
	b.WriteString(")")
	if e.Expired {
		b.WriteString("; lock validity had expired")
	}
	if e.Retained {
		b.WriteString("; not confirmed by a quorum, lock still held: Release again")
	}
	return b.String()
}

// Is matches ErrReleasePartial, and ErrLockExpired when Expired.
func (e *ReleaseError) Is(target error) bool {
	return target == ErrReleasePartial || (e.Expired && target == ErrLockExpired)
}

// Unwrap returns the per-node errors.
func (e *ReleaseError) Unwrap() []error { return e.Errs }
