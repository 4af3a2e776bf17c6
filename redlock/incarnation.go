package redlock

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redmux/redmux/mux"
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
	// cannot tell a restart from a reconnection, so every set-up of the
	// node is quarantined (but the one New saw, under
	// WithTrustNodesAtStart).
	ErrIncarnationUnknown = errors.New("redlock: node incarnation unknown")
	// ErrSlotMoved: on a Redis Cluster node, the key's hash slot moved to
	// the shard that answered less than the quarantine ago: its keys are
	// what the shard that served it before held, which may have lost them
	// (a FLUSHALL, a restart) before the move (docs/OPERATIONS.md, Redis
	// Cluster rule 6).
	ErrSlotMoved = errors.New("redlock: key's slot moved between shards")
)

// QuarantineError says why a node's answers do not count, and for how
// long. It is an OpIncarnation event's Err, and a failed node's error in
// a NotAcquiredError or ExtendError.
type QuarantineError struct {
	Node  int
	Addr  string
	Cause error         // ErrNodeRestarted, ErrNodeFailover, ErrDataSetNew, ErrDataSetReplaced, ErrDataSetFlushed or ErrIncarnationUnknown
	Left  time.Duration // quarantine left when the error was made (0: none)
}

func (e *QuarantineError) Error() string {
	what := "after restart"
	switch e.Cause {
	case ErrNodeFailover:
		what = "after failover"
	case ErrDataSetNew:
		what = "while its data set is new (no marker, or a young one: a wipe, a restart without persistence, or the nodes' first use)"
	case ErrDataSetReplaced:
		what = "after its data set was replaced (its marker changed)"
	case ErrDataSetFlushed:
		what = "after its data set was flushed or replaced (FLUSHALL, FLUSHDB or a full resync, told on the connection or by a new replication history)"
	case ErrSlotMoved:
		return "redlock: node " + strconv.Itoa(e.Node) + " (" + e.Addr + ") quarantined for this key: its slot moved between the cluster's shards less than the quarantine ago"
	case ErrIncarnationUnknown:
		if e.Left > 0 {
			return "redlock: node " + strconv.Itoa(e.Node) + " (" + e.Addr + ") incarnation unknown (INFO refused: each connection set-up may be a restart's), quarantined, " + e.Left.Round(time.Millisecond).String() + " left"
		}
		return "redlock: node " + strconv.Itoa(e.Node) + " (" + e.Addr + ") incarnation unknown (INFO refused): trusted as New saw it (WithTrustNodesAtStart); its next set-ups are quarantined"
	}
	left := e.Left.Round(time.Millisecond).String()
	if e.Left > 0 && e.Left < time.Millisecond {
		left = "an unknown time" // a young key this client did not make, its PTTL not read yet
	}
	return "redlock: node " + strconv.Itoa(e.Node) + " (" + e.Addr + ") quarantined " + what + ", " + left + " left"
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
	// flush is the node's latest data-set flush this client has judged
	// (mux.Client.LastFlush); as for seen, a reply counts only while the
	// node's latest is this one
	flush atomic.Pointer[mux.Flush]
	// hist is the replication history (master_replid) judged from a
	// grant's INFO replication on a node without the flush watch, when it
	// is not the set-up's (history.go); nil: the set-up's (seen.ReplID)
	hist atomic.Pointer[string]
	// guarded by trusts.mu
	prev  incPrev // the last known (INFO answered) incarnation
	cause error
	// unknownSaid: ErrIncarnationUnknown was reported for the node, and
	// no known incarnation was judged since: a set-up that starts no
	// quarantine (the one New saw under WithTrustNodesAtStart) is said
	// once; each quarantined one is said
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
	maxTTL atomic.Int64 // the largest TTL used (ns)
	// record is the largest TTL record read from the nodes (ns; rule 5)
	record atomic.Int64

	quarantine   time.Duration // WithQuarantine; 0: unset
	persistent   bool          // WithNodesPersistEveryWrite
	trustAtStart bool          // WithTrustNodesAtStart
}

// WithQuarantine sets the least time a node whose data set may have lost
// keys (restarted, failed over, wiped, first seen with a shorter uptime)
// does not count towards grants: the client-enforced delayed restart
// (docs/OPERATIONS.md). The quarantine is the largest of d, the largest
// TTL this Client has used and the TTL record read from the nodes (the
// largest TTL any client declared, rule 5), so it needs no setting; d at
// least the largest TTL any client of these nodes uses closes rule 5's
// residue. d below the Client's default TTL is refused (ErrBadOption).
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

// WithTrustNodesAtStart trusts each node as New finds it, whatever its
// uptime and whether or not its data set has a marker (New creates one
// without the young key where none is), for nodes the caller knows have
// granted no lock yet (servers it has just started and no other client
// uses). Only what New sees is trusted: a node New could not reach, and
// every later restart, failover or wipe, is judged as without it.
// Without it a node first seen with an uptime below the quarantine, or
// without a marker, is quarantined for the rest of it (the first use of a
// set of nodes waits the quarantine once), which is what protects a
// client started after an undelayed restart.
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
// clock measures the TTLs it expires): rule 5's Q, the largest of the TTL
// record, the TTLs used and WithQuarantine, plus drift(Q).
func (ts *trusts) period(s *lockSettings) time.Duration {
	q := quarantinePeriod(time.Duration(ts.record.Load()), time.Duration(ts.maxTTL.Load()), ts.quarantine)
	return q + s.drift(q)
}

// noteRecord raises the TTL record this client has read (rule 5).
func (ts *trusts) noteRecord(ttl time.Duration) {
	for {
		old := ts.record.Load()
		if int64(ttl) <= old || ts.record.CompareAndSwap(old, int64(ttl)) {
			return
		}
	}
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
			//mutant:trust-at-first-use
			c.judge(i, p, w, false)
		}
		if f := c.m.LastFlush(i); f != c.trust.nodes[i].flush.Load() {
			c.judgeFlush(i, f, w)
		}
	}
}

// judgeFlush applies rule 4 to a flush of node i's data set that mux read
// on a connection (CLIENT TRACKING's invalidation of every key: FLUSHALL,
// FLUSHDB, a full resync, docs/OPERATIONS.md): the data set lost keys at
// some time before f.At, and a copy it was replaced with may carry the
// accepted marker (a resync from a former replica of its own, a restore),
// so the node is quarantined from f.At, whatever its marker says.
func (c *Client) judgeFlush(i int, f *mux.Flush, w *worker) {
	ts := &c.trust
	ts.mu.Lock()
	t := &ts.nodes[i]
	if t.flush.Load() == f {
		ts.mu.Unlock()
		return
	}
	var left time.Duration
	//mutant:flush-not-quarantined
	if f != nil {
		left = c.quarantineFrom(t, monoOf(f.At))
		t.cause = ErrDataSetFlushed
		ts.gen.Add(1) // extensions put their keys back (Lock.extend)
	}
	t.flush.Store(f)
	ts.mu.Unlock()
	if f != nil {
		c.report(i, ErrDataSetFlushed, left, w)
	}
}

// obsOf is p in plain values for judgeIncarnation.
func obsOf(p *mux.Incarnation) incObs {
	if p == nil {
		return incObs{Nil: true}
	}
	return incObs{Known: p.Known, RunID: p.RunID, ReplID: p.ReplID, Promoted: p.Promoted, Seen: monoOf(p.Seen), Uptime: p.Uptime}
}

// judge applies rules 1 and 2 to node i's incarnation p
// (judgeIncarnation), stores the verdict and reports it (its event: see
// sync). atStart: p is what New saw, under WithTrustNodesAtStart.
func (c *Client) judge(i int, p *mux.Incarnation, w *worker, atStart bool) {
	ts := &c.trust
	ts.mu.Lock()
	t := &ts.nodes[i]
	if t.seen.Load() == p {
		ts.mu.Unlock()
		return
	}
	hadKnown := t.prev.Known
	v := judgeIncarnation(t.prev, obsOf(p), incRules{Persistent: ts.persistent, AtStart: atStart})
	t.prev = v.Prev
	if v.Failover {
		t.failover.Store(&failedOver{inc: p, tag: "=" + incTag(p)})
	}
	var left time.Duration
	if v.Quarantine {
		left = c.quarantineFrom(t, v.From)
	}
	if v.Cause != nil {
		t.cause = v.Cause
	}
	if v.Changed {
		ts.gen.Add(1)
	}
	// a first sight that needs no quarantine is no event; an unknown
	// incarnation is one when first met
	unknown := v.Cause == ErrIncarnationUnknown
	say := v.Cause != nil && (left > 0 || hadKnown || unknown && !t.unknownSaid)
	switch {
	case p != nil && p.Known:
		t.unknownSaid = false
	case say && unknown:
		t.unknownSaid = true
	}
	t.hist.Store(nil) // the set-up learnt the node's history
	t.seen.Store(p)
	ts.mu.Unlock()
	if say {
		c.report(i, v.Cause, left, w)
	}
}

// quarantineFrom quarantines node t for the period from the mono instant
// from (never shortening one already on) and returns what is left now.
// ts.mu held.
func (c *Client) quarantineFrom(t *trust, from int64) time.Duration {
	until := from + int64(c.trust.period(&c.def))
	now := mono()
	if until > now && until > t.until.Load() {
		t.until.Store(until)
	}
	return max(time.Duration(t.until.Load()-now), 0)
}

// report delivers node i's OpIncarnation event (see sync for w).
func (c *Client) report(i int, cause error, left time.Duration, w *worker) {
	if c.obs == nil {
		return
	}
	e := Event{Op: OpIncarnation, Node: i, Addr: c.addrs[i], Duration: left,
		Err: &QuarantineError{Node: i, Addr: c.addrs[i], Cause: cause, Left: left}}
	if w != nil {
		w.pend = append(w.pend, e)
	} else {
		c.emit(e)
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
	if c.m.LastFlush(i) != t.flush.Load() {
		return false // a flush not judged yet
	}
	u := t.until.Load()
	//mutant:quarantine-off
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
	if c.m.LastFlush(i) != t.flush.Load() {
		return &QuarantineError{Node: i, Addr: c.addrs[i], Cause: ErrDataSetFlushed, Left: time.Nanosecond}
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
// left (docs/OPERATIONS.md): by their incarnation (rule 2), a marker that
// changed, or a young data set this client knows the end of (rule 4), for
// health checks and tests. A node whose young key this client has not
// timed yet is listed with 1ns left.
func (c *Client) Quarantined() map[int]time.Duration {
	c.sync(nil)
	out := map[int]time.Duration{}
	now := mono()
	for i := range c.trust.nodes {
		if qe, ok := c.quarantineErr(i).(*QuarantineError); ok && qe != nil {
			out[i] = qe.Left
		}
		if y := c.youngLeft(i, now); y > out[i] {
			out[i] = y
		}
	}
	return out
}

// monoOf converts t (with a monotonic reading) to this package's clock.
func monoOf(t time.Time) int64 { return int64(t.Sub(epoch)) }

// checkQuarantine validates WithQuarantine: positive, and not below the
// client's own TTL (a quarantine shorter than a TTL in use lets a node
// count again while keys it lost are still held: rule 5).
func checkQuarantine(cfg *clientConfig) error {
	if cfg.quarantineSet && cfg.quarantine <= 0 {
		return fmt.Errorf("%w: quarantine %v (to turn it off for restarts, declare persistence with WithNodesPersistEveryWrite)", ErrBadOption, cfg.quarantine)
	}
	//mutant:short-quarantine-accepted
	if cfg.quarantineSet && cfg.quarantine < cfg.lock.ttl {
		return fmt.Errorf("%w: quarantine %v is below the TTL %v: it must be at least the largest TTL any client of these nodes uses (the default needs no setting: docs/OPERATIONS.md, rule 5)", ErrBadOption, cfg.quarantine, cfg.lock.ttl)
	}
	return nil
}

func (c *Client) initTrust(cfg *clientConfig) {
	c.trust.nodes = make([]trust, c.n)
	c.trust.quarantine = cfg.quarantine
	c.trust.persistent = cfg.persistent
	c.trust.trustAtStart = cfg.trustAtStart
	c.trust.noteTTL(cfg.lock.ttl)
}
