package redlock

import (
	"fmt"
	"io"
	"math"
	"time"

	"github.com/redmux/redmux/internal/lockrule"
	"github.com/redmux/redmux/mux"
)

// Defaults of the lock options (see the With* functions).
const (
	DefaultTTL           = 10 * time.Second
	DefaultTries         = 32
	DefaultRetryMin      = 50 * time.Millisecond
	DefaultRetryMax      = 250 * time.Millisecond
	DefaultDriftFactor   = 0.01
	DefaultDriftFixed    = 2 * time.Millisecond
	DefaultNodeTimeout   = 50 * time.Millisecond
	DefaultMaxExtensions = 100
	// DefaultReconnectMax is the redial backoff cap New gives mux when
	// WithMuxConfig leaves ReconnectMax 0: a restarted node is redialled
	// within 250ms of its return, so a kept-alive lock puts its key back
	// there before the next node of a rolling restart goes down
	// (docs/OPERATIONS.md). A refused redial costs a connect attempt.
	DefaultReconnectMax = 250 * time.Millisecond
)

// lockSettings are the per-lock parameters. A Client holds defaults set by
// New; Acquire and TryAcquire may override them per call.
type lockSettings struct {
	ttl         time.Duration
	tries       int
	retryMin    time.Duration
	retryMax    time.Duration
	driftFactor float64
	driftFixed  time.Duration
	// moveDrift: clusterMoveDrift where a node is a Redis Cluster (a key
	// whose slot moves loses up to 1 ms of its life), else 0
	moveDrift   time.Duration
	nodeTimeout time.Duration
	maxExt      int
	minValidity time.Duration
	backoffBase time.Duration // > 0: exponential backoff (WithBackoff) instead of the uniform range
	backoffMax  time.Duration
	retryFn     RetryFunc // non-nil: WithRetryFunc
	noFailFast  bool      // WithFailFast(false): retry when a majority is unreachable
	fencing     bool      // WithFencing: each grant gets a fencing token
	strictRel   bool      // WithStrictRelease: a Release reports nodes that did not confirm even once a quorum released
}

func defaultLockSettings() lockSettings {
	return lockSettings{
		ttl:         DefaultTTL,
		tries:       DefaultTries,
		retryMin:    DefaultRetryMin,
		retryMax:    DefaultRetryMax,
		driftFactor: DefaultDriftFactor,
		driftFixed:  DefaultDriftFixed,
		nodeTimeout: DefaultNodeTimeout,
		maxExt:      DefaultMaxExtensions,
	}
}

// drift is the clock drift allowance for ttl: ttl*factor + fixed, plus
// the slot move's rounding on Redis Cluster nodes.
func (s *lockSettings) drift(ttl time.Duration) time.Duration {
	return lockrule.Drift(ttl, s.driftFactor, s.driftFixed+s.moveDrift)
}

// clusterMoveDrift is what a key loses of its life, at most, when its
// slot moves to another shard (MIGRATE, a resharding): the remaining TTL
// travels in whole milliseconds, read on the source's clock and counted
// from the target's, so the fractions of a millisecond of both clocks'
// readings are lost or gained (docs/OPERATIONS.md, Redis Cluster rule 5).
// Every lock of a client with a cluster node budgets it: one move of a
// key's slot while the key lives.
const clusterMoveDrift = time.Millisecond

func (s *lockSettings) validate() error {
	switch {
	case s.ttl < time.Millisecond:
		return fmt.Errorf("%w: TTL %v is below 1ms", ErrBadOption, s.ttl)
	case s.ttl > maxTTL:
		return fmt.Errorf("%w: TTL %v is above %v", ErrBadOption, s.ttl, maxTTL)
	case s.tries < 1:
		return fmt.Errorf("%w: tries %d is below 1", ErrBadOption, s.tries)
	case s.retryMin < 0 || s.retryMax < s.retryMin:
		return fmt.Errorf("%w: retry delay range [%v, %v] is invalid", ErrBadOption, s.retryMin, s.retryMax)
	case s.backoffBase < 0 || (s.backoffBase > 0 && s.backoffMax < s.backoffBase):
		return fmt.Errorf("%w: backoff base %v, max %v (want 0 < base <= max)", ErrBadOption, s.backoffBase, s.backoffMax)
	case math.IsNaN(s.driftFactor) || s.driftFactor < 0 || s.driftFactor >= 1:
		return fmt.Errorf("%w: drift factor %v is outside [0, 1)", ErrBadOption, s.driftFactor)
	case s.driftFixed < 0:
		return fmt.Errorf("%w: fixed drift %v is negative", ErrBadOption, s.driftFixed)
	case s.nodeTimeout <= 0:
		return fmt.Errorf("%w: node timeout %v is not positive", ErrBadOption, s.nodeTimeout)
	case s.maxExt < 0:
		return fmt.Errorf("%w: max extensions %d is negative", ErrBadOption, s.maxExt)
	case s.minValidity < 0:
		return fmt.Errorf("%w: min validity %v is negative", ErrBadOption, s.minValidity)
	case s.drift(s.ttl)+s.minValidity >= s.ttl:
		return fmt.Errorf("%w: TTL %v leaves no validity after drift %v and min validity %v",
			ErrBadOption, s.ttl, s.drift(s.ttl), s.minValidity)
	}
	return nil
}

// maxTTL bounds TTLs so that milliseconds and nanoseconds never overflow.
const maxTTL = 1000 * time.Hour

// lockOptKind names the field a LockOption sets.
type lockOptKind uint8

const (
	optNone lockOptKind = iota
	optTTL
	optTries
	optRetryDelay
	optDriftFactor
	optDriftFixed
	optNodeTimeout
	optMaxExt
	optMinValidity
	optBackoff
	optRetryFunc
	optFailFast
	optFencing
	optStrictRelease
)

// LockOption sets one parameter of a lock. Pass it to New (it then becomes
// the client's default) or to Acquire/TryAcquire (for that call only).
// LockOption is a small value, so passing options per call does not
// allocate.
type LockOption struct {
	kind  lockOptKind
	d, d2 time.Duration
	n     int
	f     float64
	fn    RetryFunc
}

func (o LockOption) apply(s *lockSettings) {
	switch o.kind {
	case optTTL:
		s.ttl = o.d
	case optTries:
		s.tries = o.n
	case optRetryDelay:
		s.retryMin, s.retryMax = o.d, o.d2
		s.backoffBase, s.backoffMax, s.retryFn = 0, 0, nil
	case optBackoff:
		s.backoffBase, s.backoffMax, s.retryFn = o.d, o.d2, nil
		if o.d <= 0 {
			s.backoffBase = -1 // invalid (validate says so); 0 would mean "no backoff"
		}
	case optFailFast:
		s.noFailFast = o.n == 0
	case optFencing:
		s.fencing = o.n == 1
	case optStrictRelease:
		s.strictRel = o.n == 1
	case optRetryFunc:
		s.retryFn = o.fn
		s.backoffBase, s.backoffMax = 0, 0
	case optDriftFactor:
		s.driftFactor = o.f
	case optDriftFixed:
		s.driftFixed = o.d
	case optNodeTimeout:
		s.nodeTimeout = o.d
	case optMaxExt:
		s.maxExt = o.n
	case optMinValidity:
		s.minValidity = o.d
	}
}

func (o LockOption) applyClient(c *clientConfig) { o.apply(&c.lock) }

// WithTTL sets the lock's time to live on the nodes, the upper bound of its
// validity. Default 10s (DefaultTTL); at least 1ms. Sent in whole
// milliseconds (rounded up).
func WithTTL(ttl time.Duration) LockOption { return LockOption{kind: optTTL, d: ttl} }

// WithTries sets how many acquisition attempts Acquire makes before it
// gives up with ErrNotAcquired. Default 32 (DefaultTries); at least 1.
// TryAcquire always makes exactly one.
func WithTries(n int) LockOption { return LockOption{kind: optTries, n: n} }

// WithRetryDelay sets the range of the random delay between attempts: each
// wait is drawn uniformly from [min, max) (exactly min when they are equal),
// which desynchronises clients that collide. Default [50ms, 250ms). It
// replaces a WithBackoff or WithRetryFunc given before it.
func WithRetryDelay(min, max time.Duration) LockOption {
	return LockOption{kind: optRetryDelay, d: min, d2: max}
}

// WithBackoff makes the wait between attempts grow exponentially, with
// jitter: after the k-th failed attempt, d = min(max, base * 2^(k-1)) and
// the wait is drawn uniformly from [d/2, d]. Contenders that keep
// colliding spread out, and a long-held lock is polled less often. Needs
// 0 < base <= max. Replaces WithRetryDelay and WithRetryFunc given before
// it; WithTries and ctx still bound the attempts.
func WithBackoff(base, max time.Duration) LockOption {
	return LockOption{kind: optBackoff, d: base, d2: max}
}

// RetryFunc decides the wait after failed attempt number attempt (1, 2,
// ...): wait (negative counts as 0), or ok false to stop retrying at once
// (Acquire then fails with that attempt's answers). It is called from the
// goroutine of the Acquire, once per failed attempt, and must not block.
type RetryFunc func(attempt int) (wait time.Duration, ok bool)

// WithRetryFunc lets f shape the retries: it is asked after every failed
// attempt whether, and how long after, to try again. WithTries, ctx and
// the fail-fast rule (ErrUnreachable) still apply. A nil f falls back to the
// WithRetryDelay range. Replaces WithRetryDelay and WithBackoff given before
// it.
func WithRetryFunc(f RetryFunc) LockOption { return LockOption{kind: optRetryFunc, fn: f} }

// WithDriftFactor sets the clock drift allowance per unit of TTL: validity
// is TTL - elapsed - (TTL*factor + fixed drift). Default 0.01
// (DefaultDriftFactor); must be in [0, 1). Lowering it trades safety for
// validity time: nodes whose clocks run faster than this rate may expire the
// lock before the holder's validity ends.
func WithDriftFactor(f float64) LockOption { return LockOption{kind: optDriftFactor, f: f} }

// WithFixedDrift sets the fixed part of the drift allowance. Default 2ms
// (DefaultDriftFixed); not negative.
func WithFixedDrift(d time.Duration) LockOption { return LockOption{kind: optDriftFixed, d: d} }

// WithNodeTimeout sets how long one acquire, extend or release batch waits
// for the nodes' replies (all nodes are asked at once, so this is the
// per-node timeout). Keep it small compared with the TTL so that a dead
// node costs little of the validity. Default 50ms (DefaultNodeTimeout). An
// acquire never waits longer than TTL - drift, an extend never longer than
// the remaining validity.
func WithNodeTimeout(d time.Duration) LockOption { return LockOption{kind: optNodeTimeout, d: d} }

// WithMaxExtensions sets how many times a lock may be extended; further
// Extend calls fail with ErrExtendLimit. Default 100
// (DefaultMaxExtensions); 0 forbids extension; use math.MaxInt for no
// limit (which gives up Redlock's liveness property: a holder may keep the
// lock forever).
func WithMaxExtensions(n int) LockOption { return LockOption{kind: optMaxExt, n: n} }

// WithMinValidity makes an acquisition count only if at least d of validity
// remains when it is confirmed (otherwise it is released and retried, and
// finally fails with ErrValidityTooShort). Default 0: any positive
// validity.
func WithMinValidity(d time.Duration) LockOption { return LockOption{kind: optMinValidity, d: d} }

// WithFailFast(false) makes Acquire retry (within WithTries and ctx) also
// when an attempt found a majority of nodes down or refusing
// authentication, for callers that expect nodes to come back (a rolling
// restart) and would rather wait. Default true: such an attempt ends
// Acquire at once with ErrUnreachable and the nodes' causes, since no
// retry within the usual delays can succeed.
func WithFailFast(on bool) LockOption {
	o := LockOption{kind: optFailFast}
	if on {
		o.n = 1
	}
	return o
}

// WithFencing makes each acquisition also hand out a fencing token
// (Lock.Token): a number that strictly increases with every grant of the
// resource, across Clients and processes, whatever minority of nodes is
// down or slow (design and argument: docs/FENCING.md). Pass it to the
// resource the lock protects with every write; the resource must refuse a
// token lower than the highest it has seen, which is what stops a holder
// paused past its validity.
//
// Tokens are not consecutive: the client proposes one (the wall clock in
// microseconds, or above the highest counter it has seen) and the nodes
// take it with the commands that grant the lock, so the usual acquisition
// costs no extra round trip. When a granted node's counter is already at
// or above the proposal (another client's clock is ahead), the token is 1
// + the highest counter read and is written back to a quorum before
// Acquire returns: one more round trip. Correctness never depends on the
// clients' clocks (the proposal). Like the lock itself, the order of two
// grants' tokens assumes a key lasts its TTL on the nodes (no clock
// stepped forward, no eviction); past that, tokens follow the order in
// which the grants' keys were set on a node both share (docs/FENCING.md,
// "Raise first"). Tokens stay below 2^53.
//
// A multi-resource lock (AcquireMulti) gets one token, above every earlier
// holder's of any of its resources.
//
// The counter is the key resource + ":fence" on every node, a sorted set
// without a TTL (members: the node incarnations that wrote it; the top
// score is the counter), raised before the lock's SET and read after it
// by native commands (ZADD GT, SET NX, ZREVRANGE) for a single lock, by a
// script for several resources or on a Redis Cluster node. A counter of the
// string form that redmux wrote before is converted, its number kept, the
// first time an acquisition meets it; clients of that earlier form then
// fail on it with WRONGTYPE rather than read it wrong: upgrade every
// client of the nodes together (docs/FENCING.md, "The sorted-set
// counter"). It needs Redis 6.2 or later (ZADD GT), as the string form did
// (SET ... GET), and nodes that answer INFO: a node whose incarnation is
// unknown counts for no fenced grant, its failovers cannot be seen. It
// must survive restarts: run the nodes with appendonly yes and appendfsync
// always. A lost counter is covered as long as one
// node that both the last holder's quorum and the new grant's share still
// has it; two quorums of 5 can share a single node, so a counter lost on
// that node alone can repeat a token, unless the clock-based proposal is
// already above it (defence in depth, bounded by clock skew;
// docs/FENCING.md, TestFencingCounterLostOnTheIntersection).
func WithFencing() LockOption { return LockOption{kind: optFencing, n: 1} }

// WithStrictRelease(true) makes Release return a *ReleaseError
// (ErrReleasePartial) whenever a node did not confirm, even once a quorum
// of nodes released the lock. Default false: as soon as a quorum released
// it, the lock is free for others and Release returns nil, whatever the
// other nodes answered, as redsync's Unlock does; the keys of the nodes
// that did not answer expire with the TTL.
func WithStrictRelease(on bool) LockOption {
	o := LockOption{kind: optStrictRelease}
	if on {
		o.n = 1
	}
	return o
}

// Option configures a Client in New or NewWithMux. Every LockOption is
// also an Option (it sets the client's default for that parameter).
type Option interface {
	applyClient(*clientConfig)
}

type clientConfig struct {
	obs    Observer
	lock   lockSettings
	quorum int
	values io.Reader
	muxCfg mux.Config
	// incarnation.go
	quarantine               time.Duration
	quarantineSet            bool
	persistent, trustAtStart bool
	// unprotected turns rules 2 and 4 off for grants: tests only (the
	// controls that show what the quarantine prevents; export_test.go)
	unprotected bool
	// replica acknowledgements (wait.go): waitSet says WithReplicaAcks
	// was given, waitPlain its count for nodes other than Sentinel nodes
	waitSet   bool
	waitPlain int
}

type clientOption func(*clientConfig)

func (f clientOption) applyClient(c *clientConfig) { f(c) }

// WithQuorum sets how many nodes must agree for an acquisition or
// extension to count. Default N/2+1. New refuses a quorum of N/2 or less
// (two clients could then hold the lock at once) or more than N. A quorum
// above N/2+1 trades availability for nothing in safety: fewer node
// failures are tolerated.
func WithQuorum(q int) Option {
	return clientOption(func(c *clientConfig) { c.quorum = q })
}

// WithValueSource replaces the source of lock values. Each acquisition
// attempt reads ValueSize bytes from r. Values must be unique among all
// clients for as long as any lock lives: a repeated value lets one holder
// release or extend another's lock. r must be safe for concurrent use.
// Default: a ChaCha8 generator per pooled worker state, each seeded with 32
// bytes from crypto/rand (no system call per lock).
func WithValueSource(r io.Reader) Option {
	return clientOption(func(c *clientConfig) { c.values = r })
}

// WithMuxConfig sets the configuration New uses for its mux client
// (connections per node, dial timeout, AUTH, DB, RESP3, reconnect backoff, parser limits).
// Addrs and Scripts are always set by New; Timeout defaults to the node
// timeout. Ignored by NewWithMux.
func WithMuxConfig(cfg mux.Config) Option {
	return clientOption(func(c *clientConfig) { c.muxCfg = cfg })
}
