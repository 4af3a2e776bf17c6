package redlock

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redmux/redmux/internal/lockrule"
	"github.com/redmux/redmux/mux"
	"github.com/redmux/redmux/resp"
)

// This file is the client-enforced delayed restart (docs/OPERATIONS.md,
// rule 2): a node whose incarnation (mux.Incarnation: run_id and
// replication id) is new to this client does not count towards a grant
// until the quarantine period has passed since the incarnation began.

// Incarnation errors. A *QuarantineError matches ErrQuarantined and one of
// the causes.
var (
	// ErrQuarantined: the node's answer did not count towards a grant
	// because its incarnation is too new (docs/OPERATIONS.md).
	ErrQuarantined = errors.New("redlock: node quarantined")
	// ErrNodeRestarted: the node's process is new (run_id changed, or a
	// node first seen with an uptime below the quarantine).
	ErrNodeRestarted = errors.New("redlock: node restarted")
	// ErrNodeFailover: the node's replication history changed on a
	// promotion (a failover): it may lack the last writes it acknowledged
	// as a replica's primary.
	ErrNodeFailover = errors.New("redlock: node failed over")
	// ErrIncarnationUnknown: the node did not tell its incarnation (INFO
	// refused, or the mux client does not track incarnations): the client
	// cannot quarantine it after a restart.
	ErrIncarnationUnknown = errors.New("redlock: node incarnation unknown")
)

// QuarantineError says why a node's answers do not count, and for how
// long. It is an OpIncarnation event's Err, and a failed node's error in
// a NotAcquiredError or ExtendError.
type QuarantineError struct {
	Node  int
	Addr  string
	Cause error         // ErrNodeRestarted, ErrNodeFailover or ErrIncarnationUnknown
	Left  time.Duration // quarantine left when the error was made (0: none)
}

func (e *QuarantineError) Error() string {
	what := "after restart"
	switch e.Cause {
	case ErrNodeFailover:
		what = "after failover"
	case ErrIncarnationUnknown:
		if e.Left > 0 {
			return "redlock: node " + strconv.Itoa(e.Node) + " (" + e.Addr + ") incarnation unknown (it told it before), quarantined, " + e.Left.Round(time.Millisecond).String() + " left"
		}
		return "redlock: node " + strconv.Itoa(e.Node) + " (" + e.Addr + ") incarnation unknown: restarts cannot be quarantined"
	}
	return "redlock: node " + strconv.Itoa(e.Node) + " (" + e.Addr + ") quarantined " + what + ", " + e.Left.Round(time.Millisecond).String() + " left"
}

// Is matches ErrQuarantined (while time is left) and the cause.
func (e *QuarantineError) Is(target error) bool {
	return target == e.Cause || (target == ErrQuarantined && e.Left > 0)
}

// trust is what a Client knows of one node's incarnation.
type trust struct {
	// seen is the mux incarnation this client has judged; a reply counts
	// only while the node's current one is this value (else the node has
	// a newer one, not judged yet: its answers count as failures).
	seen  atomic.Pointer[mux.Incarnation]
	until atomic.Int64 // mono: quarantined before this instant; 0: not
	// failover is the incarnation last judged a failover (its counters
	// from before it are stale, see fenceTag)
	failover atomic.Pointer[failedOver]
	// guarded by trusts.mu
	known *mux.Incarnation // the last known (INFO answered) incarnation
	cause error
	// unknownSaid: ErrIncarnationUnknown was reported for the node, and
	// no known incarnation was judged since (it is said once, not at
	// every set-up)
	unknownSaid bool
}

// failedOver is an incarnation that began with a failover, and the
// strict tag of its fencing scripts.
type failedOver struct {
	inc *mux.Incarnation
	tag string
}

// trusts is the per-node incarnation state of a Client.
type trusts struct {
	mu    sync.Mutex // serialises judge
	nodes []trust
	// gen counts the incarnation changes judged (restarts, failovers):
	// an extension that sees it move puts its key back on every node that
	// did not confirm it (Lock.extend), not only on those that said 0
	gen    atomic.Uint64
	maxTTL atomic.Int64 // the largest TTL used (ns): the default quarantine

	quarantine   time.Duration // WithQuarantine; 0: the largest TTL used
	persistent   bool          // WithNodesPersistEveryWrite
	trustAtStart bool          // WithTrustNodesAtStart
}

// WithQuarantine sets how long a node whose incarnation is new (restarted,
// failed over, or first seen with a shorter uptime) does not count towards
// grants: the client-enforced delayed restart (docs/OPERATIONS.md). It
// must be at least the largest TTL any client of these nodes uses. Default:
// the largest TTL this Client has used, at least its default TTL.
func WithQuarantine(d time.Duration) Option {
	return clientOption(func(c *clientConfig) { c.quarantine = d; c.quarantineSet = true })
}

// WithNodesPersistEveryWrite declares that every node runs with
// appendonly yes and appendfsync always, so a restart loses no key: a
// restarted node counts again at once. Failovers are still quarantined (a
// promoted replica lacks the writes it had not received, whatever the
// disk), and a node first seen as a promoted replica is judged by its
// uptime as without the declaration. A false declaration gives up mutual
// exclusion across restarts.
func WithNodesPersistEveryWrite() Option {
	return clientOption(func(c *clientConfig) { c.persistent = true })
}

// WithTrustNodesAtStart trusts the incarnation each node has when this
// Client first sees it, whatever its uptime, for nodes the caller knows
// have granted no lock yet (servers it has just started and no other
// client uses). Without it a node first seen with an uptime below the
// quarantine is quarantined for the rest of it, which is what protects a
// client started after an undelayed restart. Later restarts and failovers
// are quarantined either way.
func WithTrustNodesAtStart() Option {
	return clientOption(func(c *clientConfig) { c.trustAtStart = true })
}

// noteTTL raises the default quarantine to ttl (an atomic load when it is
// no higher).
func (ts *trusts) noteTTL(ttl time.Duration) {
	for {
		old := ts.maxTTL.Load()
		if int64(ttl) <= old || ts.maxTTL.CompareAndSwap(old, int64(ttl)) {
			return
		}
	}
}

// period is the quarantine period with its drift allowance (the node's
// clock measures the TTLs it expires).
func (ts *trusts) period(s *lockSettings) time.Duration {
	q := ts.quarantine
	if q <= 0 {
		q = time.Duration(ts.maxTTL.Load())
	}
	return q + lockrule.Drift(q, s.driftFactor, s.driftFixed)
}

// sync judges every node whose mux incarnation changed since the last
// call: before an operation's commands go out, so its answers are judged
// against the newest incarnation (a change later in the operation makes
// the node's answers fail, see trusted). The common case is N atomic
// loads. With w, the OpIncarnation events wait in w.pend for flush (an
// operation under st.op: no observer code runs with it held); without,
// they are delivered at once.
func (c *Client) sync(w *worker) {
	for i := range c.trust.nodes {
		if p := c.m.Incarnation(i); p != c.trust.nodes[i].seen.Load() {
			c.judge(i, p, w)
		}
	}
}

// judge applies the quarantine rule to node i's incarnation p (its event:
// see sync).
func (c *Client) judge(i int, p *mux.Incarnation, w *worker) {
	ts := &c.trust
	ts.mu.Lock()
	t := &ts.nodes[i]
	if t.seen.Load() == p {
		ts.mu.Unlock()
		return
	}
	prev := t.known
	var from int64 // mono instant the incarnation is trusted from
	var cause error
	quarantine := false
	switch {
	case p == nil:
	case !p.Known:
		cause = ErrIncarnationUnknown
		if prev != nil {
			// it told its incarnation before and no longer does (an ACL
			// change?): it may have restarted; quarantined once, from now
			// (forgotten: it is judged as at first sight if it tells again)
			from, quarantine = monoOf(p.Seen), true
			t.known = nil
		}
	case prev == nil:
		t.known = p
		// a promoted replica lost what replication had not carried,
		// whatever its disk: persistence lifts restarts' quarantine only
		if !ts.trustAtStart && (!ts.persistent || p.Promoted) {
			from, cause, quarantine = monoOf(p.Start()), ErrNodeRestarted, true
		}
	case prev.Same(p):
		t.known = p
	default:
		t.known = p
		// the same process with a new history, or a new process that was
		// promoted: a failover; a new process otherwise: a restart
		failover := prev.RunID == p.RunID || p.Promoted
		switch {
		case failover:
			from, cause, quarantine = monoOf(p.Seen), ErrNodeFailover, true
			t.failover.Store(&failedOver{inc: p, tag: "=" + p.RunID})
		case ts.persistent:
			cause = ErrNodeRestarted
		default:
			from, cause, quarantine = monoOf(p.Start()), ErrNodeRestarted, true
		}
	}
	var left time.Duration
	if quarantine {
		until := from + int64(ts.period(&c.def))
		now := mono()
		if until > now && until > t.until.Load() {
			t.until.Store(until)
		}
		left = time.Duration(t.until.Load() - now)
		if left <= 0 {
			left = 0
		}
	}
	if cause != nil {
		t.cause = cause
	}
	if prev != nil && p != nil && p.Known && !prev.Same(p) {
		ts.gen.Add(1)
	}
	// a first sight that needs no quarantine is no event; an unknown
	// incarnation is one when first met
	say := cause != nil && (left > 0 || prev != nil || cause == ErrIncarnationUnknown && !t.unknownSaid)
	switch {
	case p != nil && p.Known:
		t.unknownSaid = false
	case say && cause == ErrIncarnationUnknown:
		t.unknownSaid = true
	}
	t.seen.Store(p)
	ts.mu.Unlock()
	if c.obs != nil && say {
		e := Event{Op: OpIncarnation, Node: i, Addr: c.addrs[i], Duration: left,
			Err: &QuarantineError{Node: i, Addr: c.addrs[i], Cause: cause, Left: left}}
		if w != nil {
			w.pend = append(w.pend, e)
		} else {
			c.emit(e)
		}
	}
}

// trusted reports whether node i's answers count towards a grant now: its
// current incarnation is the one judged, and out of quarantine. It runs on
// mux's reader (in the Success predicates): two atomic loads, and a clock
// read while a quarantine is on.
func (c *Client) trusted(i int) bool {
	t := &c.trust.nodes[i]
	if c.m.Incarnation(i) != t.seen.Load() {
		return false // a newer incarnation, not judged yet
	}
	u := t.until.Load()
	if u == 0 {
		return true
	}
	if mono() < u {
		return false
	}
	t.until.CompareAndSwap(u, 0) // over: no clock read next time
	return true
}

// quarantineErr returns node i's QuarantineError if it is quarantined
// now, else nil (failure paths only: it allocates).
func (c *Client) quarantineErr(i int) error {
	t := &c.trust.nodes[i]
	if c.m.Incarnation(i) != t.seen.Load() {
		return &QuarantineError{Node: i, Addr: c.addrs[i], Cause: ErrNodeRestarted, Left: time.Nanosecond}
	}
	u := t.until.Load()
	left := time.Duration(u - mono())
	if u == 0 || left <= 0 {
		return nil
	}
	c.trust.mu.Lock()
	cause := t.cause
	c.trust.mu.Unlock()
	if cause == nil {
		cause = ErrNodeRestarted
	}
	return &QuarantineError{Node: i, Addr: c.addrs[i], Cause: cause, Left: left}
}

// Quarantined returns the nodes quarantined now and the time each has
// left (docs/OPERATIONS.md), for health checks and tests.
func (c *Client) Quarantined() map[int]time.Duration {
	c.sync(nil)
	out := map[int]time.Duration{}
	for i := range c.trust.nodes {
		if qe, ok := c.quarantineErr(i).(*QuarantineError); ok && qe != nil {
			out[i] = qe.Left
		}
	}
	return out
}

// monoOf converts t (with a monotonic reading) to this package's clock.
func monoOf(t time.Time) int64 { return int64(t.Sub(epoch)) }

// grantPreds are the Success predicates of grants: the reply grants, and
// the node is trusted. Made once per Client (closures over it), so Do
// stays allocation-free.
type grantPreds struct {
	ok, one func(int, resp.Reply) bool // a fenced attempt's is its worker's (fencedOK)
}

// checkQuarantine validates WithQuarantine.
func checkQuarantine(cfg *clientConfig) error {
	if cfg.quarantineSet && cfg.quarantine <= 0 {
		return fmt.Errorf("%w: quarantine %v (to turn it off for restarts, declare persistence with WithNodesPersistEveryWrite)", ErrBadOption, cfg.quarantine)
	}
	return nil
}

func (c *Client) initTrust(cfg *clientConfig) {
	c.trust.nodes = make([]trust, c.n)
	c.trust.quarantine = cfg.quarantine
	c.trust.persistent = cfg.persistent
	c.trust.trustAtStart = cfg.trustAtStart
	c.trust.noteTTL(cfg.lock.ttl)
	c.preds.ok = func(i int, r resp.Reply) bool { return isOK(i, r) && c.trusted(i) }
	c.preds.one = func(i int, r resp.Reply) bool { return isOne(i, r) && c.trusted(i) }
}
