package redlock

import (
	"errors"
	"time"

	"github.com/redmux/redmux/mux"
)

// Observer is told the outcome of every lock operation of a Client and
// every node error those operations met (WithObserver): what metrics and
// traces need (acquire latency, attempts, contention, lost locks, node
// errors) without wrapping every call.
//
// Observe runs on the goroutine of the operation (the caller's, for
// Acquire, Extend and Release), after the operation has finished and
// released the lock's internal state, just before the call returns: it
// adds its own time to the call's, so keep it short and never block
// (update counters and histograms; hand anything slow to another
// goroutine). The keep-alive scheduler's events (OpKeepAlive, the node
// errors and incarnations of its extensions, and OpKeepAliveEnd) are
// delivered in order on one goroutine of the Client's own, never on the
// scheduler's or its workers': an observer that blocks there delays only
// the events behind it, never an extension or a deadline of any lock. At
// most 4096 of them wait; beyond, they are dropped and counted
// (Client.ObserverDropped). Close returns once every keep-alive event,
// those of the keep-alives it ends included, has been delivered: never
// call Client.Close from the observer. The OpNodeError and OpIncarnation
// events of an Extend or a Release are delivered once the operation is
// over too (the lock's internal mutex released), before the operation's
// own event; those of an acquisition while it runs (no lock is held yet).
// It may be called from many goroutines at once. Do not keep the Event's
// Err beyond the call if it matters to you that errors are not retained.
// Event is passed by value: a Client with an observer that allocates
// nothing allocates nothing either.
//
// A panic in Observe is recovered and counted (Client.ObserverPanics),
// never propagated: the operation's outcome stands (an acquired lock is
// returned, a release or extension has taken effect, a keep-alive worker
// goes on) and the panic loses only that event. Every event is delivered
// when no internal mutex of the Client or the lock is held, so a panicking
// observer leaves nothing locked: Release, Extend and Close return as
// they would without it.
type Observer interface {
	Observe(Event)
}

// Op names what an Event reports.
type Op uint8

const (
	// OpAcquire: one Acquire, TryAcquire, AcquireMulti or TryAcquireMulti
	// call, all its attempts included.
	OpAcquire Op = iota + 1
	// OpExtend: one Lock.Extend by the holder.
	OpExtend
	// OpKeepAlive: one extension by the keep-alive scheduler (KeepAlive).
	OpKeepAlive
	// OpRelease: one Lock.Release.
	OpRelease
	// OpNodeError: one node's failure within an operation (Event.In): an
	// error reply, a timeout, a broken or refused connection. Refusals
	// (another holder's key) are not node errors: see Event.Contended.
	OpNodeError
	// OpKeepAliveEnd: a keep-alive ended other than by Release, once per
	// KeepAlive call; Err is the cause its context was cancelled with:
	// ErrLockExpired or ErrLockLost (Event.Lost: a kept-alive lock lost,
	// reported exactly once, also when it expired between failed
	// extensions whose own events said only "unknown"), ErrHoldLimit or
	// ErrExtendLimit (the caps), ErrNotHeld, ErrClosed, or the cause of
	// the holder's ctx. Duration: how long the lock had been held (since
	// its acquisition). Reported after the event of the extension that
	// ended it, if one did.
	OpKeepAliveEnd
	// OpIncarnation: a node's incarnation changed or could not be learned
	// (docs/OPERATIONS.md), seen at the start of an operation (reported on
	// its goroutine, before its commands go out). Node, Addr: the node;
	// Err: a *QuarantineError whose Cause is ErrNodeRestarted,
	// ErrNodeFailover or ErrIncarnationUnknown; Duration: the quarantine
	// it starts (0: none, as after a restart with
	// WithNodesPersistEveryWrite). Resource is empty.
	OpIncarnation
)

var opNames = [...]string{OpAcquire: "acquire", OpExtend: "extend", OpKeepAlive: "keepalive", OpRelease: "release", OpNodeError: "node_error", OpKeepAliveEnd: "keepalive_end", OpIncarnation: "incarnation"}

// String returns the operation's name as metrics label it: "acquire",
// "extend", "keepalive", "release", "node_error", "keepalive_end" or
// "incarnation".
func (o Op) String() string {
	if int(o) < len(opNames) && opNames[o] != "" {
		return opNames[o]
	}
	return "unknown"
}

// Event is one operation's outcome (or one node error).
type Event struct {
	Op       Op
	Resource string // the lock's resource (the first of a multi-resource lock)
	// LockID: the lock's ID (Lock.ID) in the events about one lock: a
	// successful OpAcquire, OpExtend, OpKeepAlive, OpRelease,
	// OpKeepAliveEnd, and the OpNodeError of an Extend, a Release or a
	// keep-alive extension; 0 in the others.
	LockID uint64
	// Duration: how long the operation took, from the call to its return
	// (for OpAcquire every attempt and the waits between them). 0 for
	// OpNodeError.
	Duration time.Duration
	// Err: nil when the operation succeeded; else the error it returned
	// (errors.Is works: ErrNotAcquired, ErrLockLost, ErrLockExpired, ...).
	// For OpNodeError, the node's error.
	Err error
	// Attempts (OpAcquire): attempts made.
	Attempts int
	// Contended (OpAcquire): an attempt that failed found the resource
	// held by another value on some node (the winning attempt's answers
	// are not read for it: a grant at the quorum returns before the rest).
	Contended bool
	// Node, Addr (OpNodeError): the node's index and address (without a
	// password); In: the operation it failed in. Node is -1 otherwise.
	Node int
	Addr string
	In   Op
}

// Lost reports whether the event says the lock was lost or had expired
// (ErrLockLost or ErrLockExpired): the "lost locks" a service alerts on.
func (e Event) Lost() bool {
	return e.Err != nil && (errors.Is(e.Err, ErrLockLost) || errors.Is(e.Err, ErrLockExpired))
}

// WithObserver makes the Client report every operation and node error to o
// (see Observer). nil (the default) reports nothing and costs one branch
// per operation.
func WithObserver(o Observer) Option {
	return clientOption(func(c *clientConfig) { c.obs = o })
}

// emit delivers e to the observer (c.obs set), recovering a panic in it
// (counted: ObserverPanics). The caller's state must be consistent before
// it calls emit, with no mutex held.
func (c *Client) emit(e Event) {
	defer c.recoverObserver()
	c.obs.Observe(e)
}

// recoverObserver is emit's deferred call: it recovers the observer's
// panic, if any, and counts it.
func (c *Client) recoverObserver() {
	if r := recover(); r != nil {
		c.obsPanics.Add(1)
	}
}

// ObserverPanics returns how many times the observer (WithObserver)
// panicked since New. Each panic was recovered and lost only its event.
func (c *Client) ObserverPanics() uint64 { return c.obsPanics.Load() }

// observe reports an operation on l that started at t0 (mono).
func (c *Client) observe(op Op, l *Lock, t0 int64, err error) {
	c.emit(Event{Op: op, Resource: l.resource, LockID: l.id, Duration: time.Duration(mono() - t0), Err: err, Node: -1})
}

// observeNodes reports the node errors of b's last call (c.obs set), or,
// with w, keeps them in w.pend for flush (an operation under st.op).
// Nodes still pending when the call was decided without them are not
// errors; timeouts are.
func (c *Client) observeNodes(w *worker, b *mux.Batch, in Op, resource string, id uint64) {
	for i := 0; i < c.n; i++ {
		err := b.Err(i) // any of its commands' (an acquisition has two)
		if err == nil || errors.Is(err, mux.ErrPending) {
			continue
		}
		e := Event{Op: OpNodeError, Resource: resource, LockID: id, Err: err, Node: i, Addr: c.addrs[i], In: in}
		if w != nil {
			w.pend = append(w.pend, e)
		} else {
			c.emit(e)
		}
	}
}

// flush delivers the events an operation kept in w.pend (st.op released)
// and clears them.
func (c *Client) flush(w *worker) {
	for i := range w.pend {
		c.emit(w.pend[i])
	}
	clear(w.pend)
	w.pend = w.pend[:0]
}
