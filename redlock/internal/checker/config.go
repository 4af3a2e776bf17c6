package checker

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/redmux/redmux/mux"
	"github.com/redmux/redmux/redlock"
)

// Injector adds faults to the cluster under test. fakeserver.Chaos is one;
// tests against real servers write their own (InjectFunc).
type Injector interface {
	// Inject adds faults until ctx is done, then undoes them before it
	// returns. rng is its own, seeded from Config.Seed.
	Inject(ctx context.Context, rng *rand.Rand)
}

// InjectFunc adapts a function to Injector.
type InjectFunc func(ctx context.Context, rng *rand.Rand)

// Inject calls f.
func (f InjectFunc) Inject(ctx context.Context, rng *rand.Rand) { f(ctx, rng) }

// Lives is implemented by injectors that know each node's incarnation:
// its run_id, "" while it is down (or restarting). The end check
// (EndCheckRate) skips a node whose life changed.
type Lives interface {
	Lives() []string
}

// KeyLister is implemented by injectors that can read the nodes directly
// (fakeserver.Chaos): key's value and remaining time to live on every
// node (nil and -2ns where it is absent).
type KeyLister interface {
	KeyValues(key string) ([][]byte, []time.Duration)
}

// Config describes a safety run. Zero rates mean none: a run without
// crashes is CrashRate 0.
type Config struct {
	Addrs            []string
	Clients          int // redlock clients, each with its own mux connections; default 4
	WorkersPerClient int // goroutines per client; default 3
	Resources        int // contended resources; default 4
	Acquisitions     int // stop after this many successful acquisitions
	MaxDuration      time.Duration
	TTL              time.Duration // lock TTL; default 30ms, so that delays are a real fraction of it
	// TTLs, when set, are the clients' default TTLs instead: client i
	// locks with TTLs[i%len(TTLs)] (services with different TTLs sharing
	// the nodes, docs/OPERATIONS.md rule 5); extensions still take theirs
	// from TTL
	TTLs        []time.Duration
	NodeTimeout time.Duration // default TTL/6
	Seed        uint64

	// Holder behaviour, each drawn per holding.
	CrashRate  float64       // holders that never release (hold to the end of validity)
	HoldToEnd  float64       // holders that keep the lock until their claimed validity ends, then release
	MaxHold    time.Duration // the others hold U[0, MaxHold) and release; default 1ms
	ExtendRate float64       // holders that extend once: half late (near the end, full TTL), half early to a shorter TTL
	// EndCheckRate: of the HoldToEnd holders of one resource that did
	// not extend, those that read the nodes directly (Faults must be a
	// KeyLister and Lives, as the fake cluster's Chaos wrapped with its
	// nodes' lives) once after the acquisition and again just before
	// their claimed end: every node that held the lock's key the first
	// time, up and in the same incarnation both times, must hold it still
	// (KeyExpiredEarly). A node's key lives its TTL from the SET by the
	// node's clock, which gains less than the drift allowance over a TTL,
	// so it outlives the validity; a validity counted too long by a
	// fraction of a millisecond shows whenever one node's clock gained
	// near the allowance, with no contender needed to race for the gap.
	EndCheckRate float64
	// MinExtendTTL: the shortest TTL an early extension asks for (default
	// 3ms: above the default drift allowance of 2ms + 1%; a client with a
	// Redis Cluster node budgets 1ms more, so its runs need 4ms).
	MinExtendTTL time.Duration
	// ExtendDeadlineRate: extensions run under a ctx deadline of
	// U[20us, 2ms), so that some end mid-call with the commands applied.
	ExtendDeadlineRate float64
	// PauseRate: at the pause hooks (after the replies, before the library
	// reads its clock; and before an extension's send) each Acquire
	// attempt and Extend stalls U[0, MaxPause) with this probability, like
	// a GC pause. Default MaxPause: TTL.
	PauseRate float64
	MaxPause  time.Duration
	// SendPauseRate, when above PauseRate, is the rate of the pause before
	// an extension's send instead: TestSafetyLateExtensions raises it so
	// that extensions often land after another holder took the resource.
	SendPauseRate float64
	// RetryMax: contenders retry after U[0, RetryMax); default 300us.
	RetryMax time.Duration
	// KeepAliveRate: holders that keep the lock with Lock.KeepAlive
	// (fraction U[0.3, 0.7)) for U[0, KeepAliveHold), claiming what
	// Validity says while the keep-alive context lives, then release
	// (or, at CrashRate, crash: keep-alive stops, no release). Their
	// extensions pass the pause hook too. Default KeepAliveHold: 6 TTLs.
	KeepAliveRate float64
	KeepAliveHold time.Duration
	// AcquireCtxRate: acquisitions under a request-scoped ctx that ends
	// mid-attempt: half with a deadline U[20us, AcquireDeadlineMax), half
	// cancelled after such a delay (default AcquireDeadlineMax: two node
	// timeouts). A failed attempt must still release what it got.
	AcquireCtxRate     float64
	AcquireDeadlineMax time.Duration
	// EndedCtxRate: Releases and Extends made with a ctx that has already
	// ended (cancelled, a deadline in the past, or one just passed whose
	// timer may not have fired). A Release must still be sent; one that
	// says the lock was retained is retried.
	EndedCtxRate float64
	// KeepAliveExtendRate: kept-alive holders that also call Extend
	// themselves at some looks, to a shorter TTL U[3ms, TTL/2) or a
	// longer one U[TTL, 2 TTL), some under a short deadline
	// (ExtendDeadlineRate) or an ended ctx (EndedCtxRate). They act only
	// while the keep-alive context is live, and check that it never
	// outlives the validity (KeepAliveStale) nor an Extend that said lost
	// or expired (KeepAliveOutlived).
	KeepAliveExtendRate float64
	// Transport drives every client's connections (mux.Config.Transport;
	// the zero value is epoll).
	Transport mux.Transport
	// Fencing: acquisitions (single and multi-resource) use
	// redlock.WithFencing, and every holding writes to a fenced store (the
	// resources the lock protects; a multi-resource holding writes to each
	// of its resources) with its token right after acquiring; the store
	// refuses a token lower than the highest it has seen. Without Fencing
	// the holders write too, and the store accepts every write (no tokens).
	Fencing bool
	// LowGuessRate: fenced acquisitions whose token proposal is replaced,
	// as by a client whose clock is behind (the proposal minus up to 10 s),
	// stuck (1), or in step with another holder's (its latest proposal),
	// so that grants take the write-back path as well as the
	// one-round-trip path (docs/FENCING.md).
	LowGuessRate float64
	// LegacyEvery, with Fencing: every period one resource's counter is
	// rewritten on every node into the string form an earlier redmux wrote
	// ("N:tag", its top score and member), as clients of that version
	// would leave it; the clients convert them, number kept (0: never).
	LegacyEvery time.Duration
	// ZombieRate: holders that, after their write, keep the lock to the
	// end of their claimed validity, stay paused past it by U[0, TTL) (a
	// GC pause, SIGSTOP) and then write again, as a zombie.
	// The store reports a stale write: one accepted from a holding after a
	// newer holding's write was accepted. With Fencing that is a violation
	// (stale-write); without, the classic failure, counted in
	// Result.StaleWrites.
	ZombieRate float64
	// MultiRate: holdings that take 2..MultiMax resources at once with
	// AcquireMulti (resource sets overlap each other and single locks);
	// a holding claims every resource of its set. Default MultiMax: 3.
	MultiRate float64
	MultiMax  int

	// Faults runs while the workload runs (may be nil).
	Faults Injector
	// Options are added to every client.
	Options []redlock.Option
	won     *sync.Map // Leftovers: values of successful acquisitions

	// StopOnViolation ends the run early once a violation is recorded
	// (checked every 100ms), for runs that are expected to find one.
	StopOnViolation bool
	// StopOnOverlapOnly makes StopOnViolation wait for an overlap, so that
	// a run shows whether overlaps alone catch a bug.
	StopOnOverlapOnly bool
}

// Result is the outcome of Run.
type Result struct {
	Report
	Timelines       []string      // the first overlaps' claims, quarantines and faults (timeline.go)
	Acquired        int64         // successful acquisitions
	Attempts        int64         // acquisition attempts (Acquire retries until it succeeds or gives up)
	NotAcquired     int64         // Acquire calls that gave up
	OtherErrors     int64         // errors that are not expected under faults (must be 0)
	Crashed         int64         // holders that never released
	HeldToEnd       int64         // holders that kept the lock to the end of validity
	EndChecks       int64         // of those, holdings whose keys were read on the nodes just before their end (EndCheckRate)
	Extended        int64         // successful extensions
	ExtendFailed    int64         // failed extensions after which the holder kept holding what Validity said
	Multi           int64         // holdings of several resources (AcquireMulti)
	KeptAlive       int64         // holdings kept with KeepAlive
	KeepAliveEnded  int64         // of those, ended by the keep-alive context (lost, expired, limit) before the holder let go
	KeepAliveEnds   int64         // OpKeepAliveEnd events the clients' observer got
	KeepAliveLost   int64         // of those, Lost (the lock lost or expired)
	SelfExtended    int64         // Extend calls by kept-alive holders
	CtxEnded        int64         // acquisitions whose ctx ended mid-attempt (deadline or cancel)
	EndedCtxOps     int64         // Releases and Extends called with an ended ctx
	Retained        int64         // Releases that kept the lock (not confirmed by a quorum) and were retried
	MaxKeepAliveLag time.Duration // longest seen: validity over, keep-alive context still live
	Writes          int64         // writes accepted by the fenced store (Fencing or ZombieRate)
	ZombieWrites    int64         // zombie writes attempted (after the writer's validity ended)
	FencedOff       int64         // writes the store refused for a lower token
	StaleWrites     int64         // writes accepted after a newer holding's (without Fencing: the classic failure)
	LowGuesses      int64         // fenced attempts whose token proposal was lowered (LowGuessRate)
	WriteBacks      int64         // fenced grants that took the write-back path (the others: one round trip)
	LegacyCounters  int64         // counters rewritten into the string form (LegacyEvery)
	Paused          int64         // client pauses injected
	SendPaused      int64         // of them, before an extension's send (hook.ExtendSend)
	LongestPause    time.Duration
	Elapsed         time.Duration
	FirstError      error
	StoppedByCheck  bool // StopOnViolation ended the run
	// ReleasedLeftovers: keys of released holdings still on a node after
	// a Leftovers run (see Leftovers).
	ReleasedLeftovers []string
}

func (r Result) String() string {
	return fmt.Sprintf("%d writes (%d zombie writes, %d refused by token, %d stale; %d token write-backs, %d lowered proposals, %d counters rewritten in the string form), %d acquired (%d of several resources, %d held to the end (%d end checks), %d crashed, %d kept alive of which %d cancelled by keep-alive (%d keep-alive ends reported, %d lost), %d self-extends by kept-alive holders, longest keep-alive lag %v) in %d attempts, %d not acquired, %d ctx ended mid-acquire, %d extended, %d failed extensions, %d releases/extends with an ended ctx, %d retained releases, %d client pauses (%d before an extension's send, longest %v), %d other errors in %v: %s",
		r.Writes, r.ZombieWrites, r.FencedOff, r.StaleWrites, r.WriteBacks, r.LowGuesses, r.LegacyCounters, r.Acquired, r.Multi, r.HeldToEnd, r.EndChecks, r.Crashed, r.KeptAlive, r.KeepAliveEnded, r.KeepAliveEnds, r.KeepAliveLost, r.SelfExtended, r.MaxKeepAliveLag.Round(time.Microsecond),
		r.Attempts, r.NotAcquired, r.CtxEnded, r.Extended, r.ExtendFailed, r.EndedCtxOps, r.Retained, r.Paused, r.SendPaused, r.LongestPause.Round(time.Microsecond),
		r.OtherErrors, r.Elapsed.Round(time.Millisecond), r.Report)
}

func (c *Config) defaults() {
	if c.MinExtendTTL <= 0 {
		c.MinExtendTTL = 3 * time.Millisecond
	}
	if c.Clients <= 0 {
		c.Clients = 4
	}
	if c.WorkersPerClient <= 0 {
		c.WorkersPerClient = 3
	}
	if c.Resources <= 0 {
		c.Resources = 4
	}
	if c.TTL <= 0 {
		c.TTL = 30 * time.Millisecond
	}
	if c.NodeTimeout <= 0 {
		c.NodeTimeout = c.TTL / 6
	}
	if c.MaxHold <= 0 {
		c.MaxHold = time.Millisecond
	}
	if c.MaxPause <= 0 {
		c.MaxPause = c.TTL
	}
	c.SendPauseRate = max(c.SendPauseRate, c.PauseRate)
	if c.RetryMax <= 0 {
		c.RetryMax = 300 * time.Microsecond
	}
	if c.MultiMax < 2 {
		c.MultiMax = 3
	}
	if c.MultiMax > c.Resources {
		c.MultiMax = c.Resources
	}
	if c.KeepAliveHold <= 0 {
		c.KeepAliveHold = 6 * c.TTL
	}
	if c.AcquireDeadlineMax <= 0 {
		c.AcquireDeadlineMax = 2 * c.NodeTimeout
	}
	if c.MaxDuration <= 0 {
		c.MaxDuration = time.Minute
	}
}
