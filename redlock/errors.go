package redlock

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
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
	// ErrExtendLimit: the lock has been extended WithMaxExtensions times.
	ErrExtendLimit = errors.New("redlock: extension limit reached")
	// ErrReleasePartial: some nodes did not confirm the release. Matched by
	// *ReleaseError. Their keys expire by themselves after the TTL.
	ErrReleasePartial = errors.New("redlock: release partly failed")
	// ErrNotHeld: the Lock is the zero value or was already released.
	ErrNotHeld = errors.New("redlock: lock not held")
	// ErrBadOption: an option or argument is invalid.
	ErrBadOption = errors.New("redlock: invalid option")
	// ErrClosed: the client was closed.
	ErrClosed = errors.New("redlock: client closed")
)

// NotAcquiredError reports a failed Acquire or TryAcquire: the counts are
// those of the last attempt. errors.Is(err, ErrNotAcquired) is true;
// errors.Is(err, ErrValidityTooShort) is true when the last attempt reached
// the quorum but not enough validity; the cause (a context error,
// ErrClosed, ...) is reachable with errors.Is/As too.
type NotAcquiredError struct {
	Resource string
	Tries    int  // attempts made
	Granted  int  // nodes that answered OK to SET NX in the last attempt
	Refused  int  // nodes that answered nil: the resource was locked there
	Failed   int  // nodes that answered an error, were down or broke the connection
	Pending  int  // nodes that had not answered when the call ended (timed out, or not needed once the outcome was known)
	TooShort bool // the last attempt had a quorum but too little validity
	Err      error
}

func (e *NotAcquiredError) Error() string {
	var b strings.Builder
	b.WriteString("redlock: lock ")
	b.WriteString(strconv.Quote(e.Resource))
	b.WriteString(" not acquired after ")
	b.WriteString(strconv.Itoa(e.Tries))
	b.WriteString(" tries (last: ")
	fmt.Fprintf(&b, "%d granted, %d refused, %d failed, %d pending", e.Granted, e.Refused, e.Failed, e.Pending)
	if e.TooShort {
		b.WriteString(", validity too short")
	}
	b.WriteString(")")
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Is reports whether target is ErrNotAcquired, or ErrValidityTooShort for
// an attempt that failed on validity.
func (e *NotAcquiredError) Is(target error) bool {
	return target == ErrNotAcquired || (e.TooShort && target == ErrValidityTooShort)
}

// Unwrap returns the cause, if any.
func (e *NotAcquiredError) Unwrap() error { return e.Err }

// ExtendError reports a failed Extend. It matches ErrLockExpired when the
// validity ran out first, else ErrLockLost. After it the Lock's validity is
// never longer than before the call (shorter if the lock is known lost or
// the new TTL was shorter: some nodes may have applied it).
type ExtendError struct {
	Resource string
	Extended int  // nodes that extended the TTL
	Refused  int  // nodes that no longer hold the lock's value
	Failed   int  // nodes that answered an error, were down or broke the connection
	Pending  int  // nodes that had not answered when the call ended (timed out, or not needed once the outcome was known)
	Expired  bool // validity ended before a quorum confirmed
	Err      error
}

func (e *ExtendError) Error() string {
	what := "lost"
	if e.Expired {
		what = "expired"
	}
	s := fmt.Sprintf("redlock: extend %q failed, lock %s (%d extended, %d refused, %d failed, %d pending)",
		e.Resource, what, e.Extended, e.Refused, e.Failed, e.Pending)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Is matches ErrLockExpired or ErrLockLost.
func (e *ExtendError) Is(target error) bool {
	if e.Expired {
		return target == ErrLockExpired
	}
	return target == ErrLockLost
}

// Unwrap returns the cause, if any.
func (e *ExtendError) Unwrap() error { return e.Err }

// ReleaseError reports the nodes that did not confirm a release (error
// reply, timeout, down). errors.Is(err, ErrReleasePartial) is true, and each
// node's error is reachable through Errs.
type ReleaseError struct {
	Resource string
	Released int   // nodes that deleted the key
	Failed   []int // node indices that did not answer with an integer
	Errs     []error
}

func (e *ReleaseError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "redlock: release %q partly failed (%d released; failed nodes %v", e.Resource, e.Released, e.Failed)
	if len(e.Errs) > 0 && e.Errs[0] != nil {
		b.WriteString("; first: ")
		b.WriteString(e.Errs[0].Error())
	}
	b.WriteString(")")
	return b.String()
}

// Is matches ErrReleasePartial.
func (e *ReleaseError) Is(target error) bool { return target == ErrReleasePartial }

// Unwrap returns the per-node errors.
func (e *ReleaseError) Unwrap() []error { return e.Errs }
