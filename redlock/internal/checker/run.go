package checker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redmux/redmux/internal/lockrule"
	"github.com/redmux/redmux/mux"
	"github.com/redmux/redmux/redlock"
	"github.com/redmux/redmux/redlock/internal/hook"
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
	NodeTimeout      time.Duration // default TTL/6
	Seed             uint64

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
	// ExtendDeadlineRate: extensions run under a ctx deadline of
	// U[20us, 2ms), so that some end mid-call with the commands applied.
	ExtendDeadlineRate float64
	// PauseRate: at the pause hook (after the replies, before the library
	// reads its clock) each Acquire attempt and Extend stalls U[0, MaxPause)
	// with this probability, like a GC pause. Default MaxPause: TTL.
	PauseRate float64
	MaxPause  time.Duration
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
	Paused          int64         // client pauses injected
	LongestPause    time.Duration
	Elapsed         time.Duration
	FirstError      error
	StoppedByCheck  bool // StopOnViolation ended the run
	// ReleasedLeftovers: keys of released holdings still on a node after
	// a Leftovers run (see Leftovers).
	ReleasedLeftovers []string
}

func (r Result) String() string {
	return fmt.Sprintf("%d writes (%d zombie writes, %d refused by token, %d stale; %d token write-backs, %d lowered proposals), %d acquired (%d of several resources, %d held to the end (%d end checks), %d crashed, %d kept alive of which %d cancelled by keep-alive (%d keep-alive ends reported, %d lost), %d self-extends by kept-alive holders, longest keep-alive lag %v) in %d attempts, %d not acquired, %d ctx ended mid-acquire, %d extended, %d failed extensions, %d releases/extends with an ended ctx, %d retained releases, %d client pauses (longest %v), %d other errors in %v: %s",
		r.Writes, r.ZombieWrites, r.FencedOff, r.StaleWrites, r.WriteBacks, r.LowGuesses, r.Acquired, r.Multi, r.HeldToEnd, r.EndChecks, r.Crashed, r.KeptAlive, r.KeepAliveEnded, r.KeepAliveEnds, r.KeepAliveLost, r.SelfExtended, r.MaxKeepAliveLag.Round(time.Microsecond),
		r.Attempts, r.NotAcquired, r.CtxEnded, r.Extended, r.ExtendFailed, r.EndedCtxOps, r.Retained, r.Paused, r.LongestPause.Round(time.Microsecond),
		r.OtherErrors, r.Elapsed.Round(time.Millisecond), r.Report)
}

func (c *Config) defaults() {
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

// holder is one worker's state, reached by the pause hook through ctx.
type holder struct {
	rng       *rand.Rand
	pauseRate float64
	maxPause  time.Duration
	lowGuess  float64 // Config.LowGuessRate
	lowered   atomic.Int64
	writeBack atomic.Int64 // fenced grants that took the write-back path
	fired     bool         // the hook ran in the current call
	at        time.Time    // when the hook returned (after any pause)
	attempts  atomic.Int64
	paused    atomic.Int64
	longest   atomic.Int64
}

type holderKey struct{}

// pauseAt is the hook installed during runs: it stalls the checker's own
// holders (found through ctx) and notes when it returned. The library
// reads its clock after this, so h.at is never later than its t2.
func pauseAt(ctx context.Context, p hook.Point) {
	h, _ := ctx.Value(holderKey{}).(*holder)
	if h == nil {
		return
	}
	switch p {
	case hook.AcquireReplied:
		h.attempts.Add(1)
	case hook.FenceWriteBack:
		h.writeBack.Add(1)
	}
	if h.pauseRate > 0 && h.rng.Float64() < h.pauseRate {
		d := time.Duration(h.rng.Int64N(int64(h.maxPause)))
		time.Sleep(d)
		h.paused.Add(1)
		if int64(d) > h.longest.Load() {
			h.longest.Store(int64(d))
		}
	}
	h.fired = true
	h.at = time.Now()
}

// lastGuess is the latest token proposal a holder made (guessAt's "in
// step" case).
var lastGuess atomic.Uint64

// guessAt is the guess hook installed during runs: at LowGuessRate it
// replaces a holder's token proposal with a lower or equal one.
func guessAt(ctx context.Context, g uint64) uint64 {
	h, _ := ctx.Value(holderKey{}).(*holder)
	if h == nil || h.lowGuess == 0 || h.rng.Float64() >= h.lowGuess {
		lastGuess.Store(g)
		return g
	}
	h.lowered.Add(1)
	switch h.rng.IntN(3) {
	case 0:
		return g - min(g-1, uint64(h.rng.Int64N(10_000_000))) // a clock up to 10 s behind
	case 1:
		return 1
	}
	return max(lastGuess.Load(), 1)
}

var (
	hookMu    sync.Mutex
	hookUsers int
)

// installHook installs pauseAt while at least one run needs it.
func installHook() (remove func()) {
	hookMu.Lock()
	defer hookMu.Unlock()
	if hookUsers == 0 {
		hook.Set(pauseAt)
		hook.SetGuess(guessAt)
	}
	hookUsers++
	return func() {
		hookMu.Lock()
		defer hookMu.Unlock()
		hookUsers--
		if hookUsers == 0 {
			hook.Set(nil)
			hook.SetGuess(nil)
		}
	}
}

// drift is redlock's default drift allowance for ttl (the checker's
// clients do not change it).
func drift(ttl time.Duration) time.Duration {
	return lockrule.Drift(ttl, redlock.DefaultDriftFactor, redlock.DefaultDriftFixed)
}

// Run drives the workload until Acquisitions were recorded or MaxDuration
// passed, then checks the history.
func Run(cfg Config) (Result, error) {
	cfg.defaults()
	defer installHook()()
	clients := make([]*redlock.Client, 0, cfg.Clients)
	defer func() {
		for _, c := range clients {
			_ = c.Close()
		}
	}()
	// Every client reports to its own counting observer: the keep-alive
	// ends it is told of are checked, per lock, against what the holders
	// saw.
	obs := make([]*endCounter, cfg.Clients)
	for i := 0; i < cfg.Clients; i++ {
		obs[i] = newEndCounter()
		opts := append([]redlock.Option{
			redlock.WithObserver(obs[i]),
			redlock.WithTTL(cfg.TTL),
			redlock.WithNodeTimeout(cfg.NodeTimeout),
			redlock.WithTries(1000), // bounded by the run's ctx in practice
			redlock.WithRetryDelay(0, cfg.RetryMax),
			// a node that comes back is reconnected within 50ms
			redlock.WithMuxConfig(mux.Config{ReconnectMin: 5 * time.Millisecond, ReconnectMax: 50 * time.Millisecond, Transport: cfg.Transport}),
		}, cfg.Options...)
		c, err := redlock.New(cfg.Addrs, opts...)
		if err != nil {
			return Result{}, err
		}
		clients = append(clients, c)
	}
	resources := make([]string, cfg.Resources)
	for i := range resources {
		resources[i] = fmt.Sprintf("checker:res:%d", i)
	}

	rec := NewRecorder()
	store := newStore(cfg.Fencing)
	var res Result
	var firstErr atomic.Pointer[error]
	ctx, cancel := context.WithTimeout(context.Background(), cfg.MaxDuration)
	defer cancel()
	start := time.Now()

	var injWG sync.WaitGroup
	if cfg.Faults != nil {
		injWG.Add(1)
		go func() {
			defer injWG.Done()
			cfg.Faults.Inject(ctx, rand.New(rand.NewPCG(cfg.Seed, 0xfa17)))
		}()
	}
	var stopped atomic.Bool
	if cfg.StopOnViolation {
		injWG.Add(1)
		go func() {
			defer injWG.Done()
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
					rep := rec.Check()
					if rep.Violations > 0 || (!cfg.StopOnOverlapOnly && rep.Total() > 0) {
						stopped.Store(true)
						cancel()
						return
					}
				}
			}
		}()
	}

	var wg sync.WaitGroup
	var s stats
	holders := make([]*holder, 0, cfg.Clients*cfg.WorkersPerClient)
	for ci, c := range clients {
		for wi := 0; wi < cfg.WorkersPerClient; wi++ {
			id := ci*cfg.WorkersPerClient + wi
			h := &holder{rng: rand.New(rand.NewPCG(cfg.Seed, uint64(id))), pauseRate: cfg.PauseRate, maxPause: cfg.MaxPause, lowGuess: cfg.LowGuessRate}
			// the pause hook's state for this worker's keep-alive
			// extensions (run by the client's scheduler, one at a time
			// per lock, one lock at a time per worker)
			kh := &holder{rng: rand.New(rand.NewPCG(cfg.Seed, uint64(id)|1<<32)), pauseRate: cfg.PauseRate, maxPause: cfg.MaxPause}
			holders = append(holders, h, kh)
			wg.Add(1)
			go func() {
				defer wg.Done()
				w := &worker{cfg: &cfg, c: c, obs: obs[ci], id: id, h: h, kh: kh, rec: rec, s: &s, resources: resources, store: store,
					note: func(err error) {
						s.other.Add(1)
						firstErr.CompareAndSwap(nil, &err)
					}}
				w.kl, _ = cfg.Faults.(KeyLister)
				w.lives, _ = cfg.Faults.(Lives)
				w.loop(ctx)
			}()
		}
	}
	wg.Wait()
	cancel()
	injWG.Wait()
	res.Elapsed = time.Since(start)
	// Closed now, not at return: Close ends the keep-alives still on (the
	// crashed holders') and reports them, so every end is counted below.
	for _, c := range clients {
		_ = c.Close()
	}
	res.KeepAliveEnds, res.KeepAliveLost = checkEnds(obs, rec)
	res.Report = rec.Check()
	res.Acquired, res.NotAcquired, res.OtherErrors = s.acquired.Load(), s.notAcq.Load(), s.other.Load()
	res.Crashed, res.HeldToEnd = s.crashed.Load(), s.heldToEnd.Load()
	res.EndChecks = s.endChecks.Load()
	res.Extended, res.ExtendFailed = s.extended.Load(), s.extFailed.Load()
	res.KeptAlive, res.KeepAliveEnded, res.Multi = s.keptAlive.Load(), s.kaEnded.Load(), s.multi.Load()
	res.SelfExtended, res.CtxEnded, res.EndedCtxOps, res.Retained = s.selfExt.Load(), s.ctxEnded.Load(), s.endedOps.Load(), s.retained.Load()
	res.MaxKeepAliveLag = time.Duration(s.kaLag.Load())
	res.Writes, res.ZombieWrites, res.FencedOff, res.StaleWrites = store.writes.Load(), s.zombies.Load(), store.refused.Load(), store.stale.Load()
	for _, h := range holders {
		res.Attempts += h.attempts.Load()
		res.Paused += h.paused.Load()
		res.LowGuesses += h.lowered.Load()
		res.WriteBacks += h.writeBack.Load()
		if d := time.Duration(h.longest.Load()); d > res.LongestPause {
			res.LongestPause = d
		}
	}
	res.StoppedByCheck = stopped.Load()
	if p := firstErr.Load(); p != nil {
		res.FirstError = *p
	}
	return res, nil
}

type stats struct {
	acquired, notAcq, other, crashed, heldToEnd, extended, extFailed atomic.Int64
	keptAlive, kaEnded, multi                                        atomic.Int64
	selfExt, ctxEnded, endedOps, retained, kaLag, zombies            atomic.Int64
	endChecks                                                        atomic.Int64 // EndCheckRate
}

// fencedStore is the resource the locks protect: it keeps, per resource,
// the highest token it has seen and refuses lower ones (when fenced). It
// reports a stale write (one accepted from a holding granted before the
// newest holding whose write it accepted) and, with tokens, a regression:
// a holding granted after the one that wrote the highest token, whose own
// token is not higher.
type fencedStore struct {
	fenced                 bool
	mu                     sync.Mutex
	top                    map[string]uint64
	topGot                 map[string]time.Time // grant (Acquire's return) of the top token's holding
	newest                 map[string]time.Time // grant of the newest writer
	topValid               map[string]bool      // the top token's holding had validity when its Acquire returned
	writes, refused, stale atomic.Int64
}

func newStore(fenced bool) *fencedStore {
	return &fencedStore{fenced: fenced, top: map[string]uint64{}, topGot: map[string]time.Time{}, topValid: map[string]bool{}, newest: map[string]time.Time{}}
}

// write is a write to resource r by the holding granted at got (Acquire's
// return) with token, valid when got was read if valid. It returns whether
// the write was stale and, if the token regressed, the top token it did
// not exceed. Grants are ordered by got only between holdings that had
// validity at got: their claims cannot overlap (the overlap check), so
// the later got is the later grant. A holding whose validity had run out
// before its Acquire returned (a descheduled goroutine on a loaded
// machine) may have been granted before the top token's holding.
func (s *fencedStore) write(r string, got time.Time, valid bool, token uint64) (stale bool, regressed bool, top uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	top, seen := s.top[r], !s.topGot[r].IsZero()
	if s.fenced && seen && valid && s.topValid[r] && got.After(s.topGot[r]) && token <= top {
		regressed = true
	}
	if s.fenced && token < top {
		s.refused.Add(1)
		return false, regressed, top
	}
	if !seen || token > top || !s.fenced {
		s.top[r], s.topGot[r], s.topValid[r] = token, got, valid
	}
	s.writes.Add(1)
	if n, ok := s.newest[r]; ok && got.Before(n) {
		s.stale.Add(1)
		return true, regressed, top
	}
	s.newest[r] = got
	return false, regressed, top
}

// worker is one contending goroutine.
type worker struct {
	cfg       *Config
	c         *redlock.Client
	obs       *endCounter // c's observer
	kl        KeyLister   // cfg.Faults', if it reads the nodes (EndCheckRate)
	lives     Lives       // and knows their incarnations
	id        int
	h         *holder
	kh        *holder // the pause hook's state for keep-alive extensions
	rec       *Recorder
	s         *stats
	resources []string
	note      func(error)
	kind      string // what the next claim follows (Interval.Kind)
	store     *fencedStore
}

// write is a holding's write to the fenced store; a stale one accepted
// with Fencing on breaks the contract.
func (w *worker) write(r string, got time.Time, l redlock.Lock, zombie bool) {
	stale, regressed, top := w.store.write(r, got, got.Before(l.Until()), l.Token())
	if stale && w.cfg.Fencing {
		w.rec.Broke(StaleWrite, "holder %d: %q write with token %d (zombie %v) accepted after a newer holder's", w.id, r, l.Token(), zombie)
	}
	if regressed {
		w.rec.Broke(TokenRegression, "holder %d: %q granted after the holder of the highest token %d, with token %d not higher", w.id, r, top, l.Token())
	}
}

// writeAll is a holding's write to each resource it holds: r, or every
// resource of the set rs.
func (w *worker) writeAll(r string, rs []string, got time.Time, l redlock.Lock, zombie bool) {
	if zombie {
		w.s.zombies.Add(int64(max(len(rs), 1)))
	}
	if rs == nil {
		w.write(r, got, l, zombie)
		return
	}
	for _, x := range rs {
		w.write(x, got, l, zombie)
	}
}

func (w *worker) loop(runCtx context.Context) {
	cfg, h, rng := w.cfg, w.h, w.h.rng
	ctx := context.WithValue(runCtx, holderKey{}, h)
	for ctx.Err() == nil && w.s.acquired.Load() < int64(cfg.Acquisitions) {
		r := w.resources[rng.IntN(len(w.resources))]
		var rs []string // the set of a multi-resource holding
		if rng.Float64() < cfg.MultiRate {
			k := 2 + rng.IntN(cfg.MultiMax-1)
			for _, i := range rng.Perm(len(w.resources))[:k] {
				rs = append(rs, w.resources[i])
			}
			r = strings.Join(rs, "+")
		}
		h.fired = false
		var (
			l   redlock.Lock
			err error
		)
		actx, acancel := ctx, context.CancelFunc(func() {})
		if rng.Float64() < cfg.AcquireCtxRate {
			d := 20*time.Microsecond + time.Duration(rng.Int64N(int64(cfg.AcquireDeadlineMax)))
			if rng.IntN(2) == 0 {
				actx, acancel = context.WithTimeout(ctx, d)
			} else {
				actx, acancel = context.WithCancel(ctx)
				t := time.AfterFunc(d, acancel)
				stop := acancel
				acancel = func() { t.Stop(); stop() }
			}
		}
		if rs != nil {
			if cfg.Fencing {
				l, err = w.c.AcquireMulti(actx, rs, redlock.WithFencing())
			} else {
				l, err = w.c.AcquireMulti(actx, rs)
			}
		} else if cfg.Fencing {
			l, err = w.c.Acquire(actx, r, redlock.WithFencing())
		} else {
			l, err = w.c.Acquire(actx, r)
		}
		if err != nil && actx != ctx && actx.Err() != nil && ctx.Err() == nil {
			w.s.ctxEnded.Add(1)
		}
		acancel()
		if err != nil {
			if !errors.Is(err, redlock.ErrNotAcquired) {
				w.note(err)
			}
			w.s.notAcq.Add(1)
			continue
		}
		got := time.Now()
		w.s.acquired.Add(1)
		if rs != nil {
			w.s.multi.Add(1)
		}
		if cfg.won != nil {
			v := l.ValueArray()
			cfg.won.Store(string(v[:]), true)
		}
		end := l.Until()
		if h.fired && !end.After(h.at) {
			w.rec.Broke(NoValidity, "holder %d: %q valid until %v after the replies were in", w.id, r, end.Sub(h.at))
		}
		holding := w.rec.NewHolding()
		claim := func(from, to time.Time) {
			if rs == nil {
				w.rec.Add(Interval{Resource: r, Holder: w.id, Holding: holding, Start: from, End: to, Kind: w.kind})
				return
			}
			for _, x := range rs {
				w.rec.Add(Interval{Resource: x, Holder: w.id, Holding: holding, Start: from, End: to, Kind: w.kind})
			}
		}
		w.kind = "acquired"
		if cfg.Fencing || cfg.ZombieRate > 0 {
			w.writeAll(r, rs, got, l, false)
			if rng.Float64() < cfg.ZombieRate {
				// keeps the lock to its end, sleeps past it, then writes
				claim(got, end)
				sleepUntil(ctx, end.Add(time.Duration(rng.Int64N(int64(cfg.TTL)))))
				w.writeAll(r, rs, got, l, true)
				w.release(l, r)
				continue
			}
		}

		if rng.Float64() < cfg.KeepAliveRate {
			w.keepAlive(runCtx, l, r, got, claim)
			continue
		}
		if rng.Float64() < cfg.CrashRate {
			// A crashed holder: it believes it holds the lock until its
			// validity ends and never releases.
			w.s.crashed.Add(1)
			claim(got, end)
			continue
		}
		from := got
		if rng.Float64() < cfg.ExtendRate {
			from, end = w.extend(ctx, &l, r, from, end, claim)
		}
		if rng.Float64() < cfg.HoldToEnd {
			w.s.heldToEnd.Add(1)
			if rs == nil && from.Equal(got) && w.lives != nil && w.kl != nil && rng.Float64() < cfg.EndCheckRate {
				w.checkEnd(ctx, r, l, end)
			}
			sleepUntil(ctx, end)
		} else {
			sleepUntil(ctx, time.Now().Add(time.Duration(rng.Int64N(int64(cfg.MaxHold)))))
		}
		relAt := time.Now()
		if relAt.Before(end) {
			end = relAt
		}
		claim(from, end)
		w.release(l, r)
	}
}

// endCheckSpan is how long before its claimed end a holder starts
// reading the nodes (EndCheckRate), every ~50us until the end: a read
// counts when it is over before the end.
const endCheckSpan = 1500 * time.Microsecond

// checkEnd is the end check (EndCheckRate) of the holding of r by l,
// whose claimed validity ends at end: the nodes that hold l's value now
// (up, their incarnation unchanged across the read) must hold it still
// at every read of the last endCheckSpan before end, unless one went down
// or restarted meanwhile. A read counts only when it is over before end
// and the run's ctx had not ended by then (the injector resets the clocks
// after that).
func (w *worker) checkEnd(ctx context.Context, r string, l redlock.Lock, end time.Time) {
	v := l.ValueArray()
	held := w.holding(r, v[:])
	sleepUntil(ctx, end.Add(-endCheckSpan))
	counted := false
	for ; ; time.Sleep(50 * time.Microsecond) {
		before := w.lives.Lives()
		vals, _ := w.kl.KeyValues(r)
		after := w.lives.Lives()
		now := time.Now()
		if ctx.Err() != nil || !now.Before(end) {
			return // over (a read after the end is no evidence), or the faults are being undone
		}
		if !counted {
			counted = true
			w.s.endChecks.Add(1)
		}
		for i, life := range held {
			if life != "" && before[i] == life && after[i] == life && string(vals[i]) != string(v[:]) {
				w.rec.Broke(KeyExpiredEarly, "holder %d: %q key gone from node %d (up, same incarnation) %v before the end of the validity it was given",
					w.id, r, i, end.Sub(now))
				return
			}
		}
	}
}

// holding returns, per node, its incarnation where it holds value for r
// now (up, the same incarnation before and after the read), else "".
func (w *worker) holding(r string, value []byte) []string {
	before := w.lives.Lives()
	vals, _ := w.kl.KeyValues(r)
	after := w.lives.Lives()
	out := make([]string, len(vals))
	for i := range vals {
		if before[i] != "" && before[i] == after[i] && string(vals[i]) == string(value) {
			out[i] = before[i]
		}
	}
	return out
}

// endedCtx returns, at EndedCtxRate, a ctx that has already ended (with
// h for the pause hook): cancelled, a deadline in the past, or a 1us
// timeout spun past (its timer may not have fired yet). Otherwise base.
func (w *worker) endedCtx(base context.Context) (context.Context, context.CancelFunc) {
	rng := w.h.rng
	if rng.Float64() >= w.cfg.EndedCtxRate {
		return base, func() {}
	}
	w.s.endedOps.Add(1)
	switch rng.IntN(3) {
	case 0:
		ctx, cancel := context.WithCancel(base)
		cancel()
		return ctx, cancel
	case 1:
		return context.WithDeadline(base, time.Now().Add(-time.Millisecond))
	}
	ctx, cancel := context.WithTimeout(base, time.Microsecond)
	for t := time.Now(); time.Since(t) < 2*time.Microsecond; {
	}
	return ctx, cancel
}

// release releases l, at EndedCtxRate with an ended ctx. Partial, expired
// and lost releases are expected under faults; replies of the wrong shape
// never are. A release that kept the lock (not confirmed by a quorum) is
// retried a few times, as a service would; the keys expire anyway.
func (w *worker) release(l redlock.Lock, r string) {
	ctx, cancel := w.endedCtx(context.WithValue(context.Background(), holderKey{}, w.h))
	defer cancel()
	for try := 0; ; try++ {
		err := l.Release(ctx)
		var re *redlock.ReleaseError
		if err == nil || !errors.As(err, &re) || !re.Retained {
			if l.Held() {
				w.rec.Broke(ReleaseContract, "holder %d: release of %q returned %v and the lock is still held", w.id, r, err)
			}
			if err != nil {
				w.checkRelease(r, err)
			}
			return
		}
		w.checkRelease(r, err)
		if !l.Held() {
			w.rec.Broke(ReleaseContract, "holder %d: release of %q said retained but the lock is not held", w.id, r)
			return
		}
		w.s.retained.Add(1)
		if try == 3 {
			return
		}
		time.Sleep(w.cfg.NodeTimeout)
		ctx = context.Background()
	}
}

// keepAlive holds l under KeepAlive for U[0, KeepAliveHold): it works
// while the keep-alive context lives, claiming at each look (every TTL/6)
// the validity Lock.Until then reports; a claim is cut where the next look
// saw another end, where the holder let go (release, or seeing the context
// cancelled). At KeepAliveExtendRate the holder also calls Extend itself
// at some looks (shorter or longer TTLs, some under a short deadline or an
// ended ctx), as services do on locks they keep alive. A crashing holder
// stops the keep-alive and keeps its last claim to its end, never
// releasing. The scheduler's extensions run under a context carrying
// w.kh, so the pause hook stalls them too (a pause past the validity must
// end the keep-alive, not extend it); the holder's own under w.h.
//
// Contracts: at every look, the keep-alive's end of validity is the
// lock's (KeepAliveStale: read through hook.KeepAliveSynced while no
// extension is in flight); an Extend that returned ErrLockLost or
// ErrLockExpired has cancelled the keep-alive context before returning
// (KeepAliveOutlived). How long the context outlives the validity (the
// timer's goroutine hop) is measured: Result.MaxKeepAliveLag.
func (w *worker) keepAlive(runCtx context.Context, l redlock.Lock, r string, got time.Time, claim func(from, to time.Time)) {
	cfg, rng := w.cfg, w.h.rng
	kctx, stop := context.WithCancel(context.WithValue(runCtx, holderKey{}, w.kh))
	defer stop()
	curStart, curEnd := got, l.Until()
	hctx, err := l.KeepAlive(kctx, redlock.KeepAliveFraction(0.3+0.4*rng.Float64()))
	if err != nil {
		// its validity ended already (a pause at the acquisition)
		claim(curStart, minTime(curEnd, time.Now()))
		if !errors.Is(err, redlock.ErrLockExpired) && !errors.Is(err, redlock.ErrClosed) {
			w.note(err)
		}
		w.release(l, r)
		return
	}
	w.s.keptAlive.Add(1)
	w.obs.started(l.ID())
	crash := rng.Float64() < cfg.CrashRate
	selfExtend := rng.Float64() < cfg.KeepAliveExtendRate
	deadline := got.Add(time.Duration(rng.Int64N(int64(cfg.KeepAliveHold))))
	look := cfg.TTL / 6
	letGo := func() {
		claim(curStart, minTime(curEnd, time.Now()))
		w.s.kaEnded.Add(1)
		// Ended by itself (lost, expired, a cap) before the Release: it is
		// reported. Not when the holder's own ctx ended it (the run's end):
		// the Release may come before the scheduler sees that ctx, and then
		// Release ends it, unreported by design.
		// (Compared by identity: a cause from the holder's ctx is the
		// sentinel itself; an Extend's error that wraps its own ctx's
		// deadline is the scheduler's, and reported.)
		if c := context.Cause(hctx); c != nil && c != context.Canceled && c != context.DeadlineExceeded {
			w.obs.ended(l.ID(), errors.Is(c, redlock.ErrLockLost) || errors.Is(c, redlock.ErrLockExpired))
		}
		w.release(l, r)
	}
	for {
		now := time.Now()
		live := hctx.Err() == nil
		u := l.Until()
		if live && !u.IsZero() && now.After(u) {
			// the context is cancelled by a timer at the deadline: the
			// lag is a goroutine's scheduling delay (measured, not judged:
			// on 2 loaded cores it reaches the scheduler's 10ms slice)
			if lag := now.Sub(u); int64(lag) > w.s.kaLag.Load() {
				w.s.kaLag.Store(int64(lag))
			}
		}
		if kept, synced := hook.KeepAliveSynced(l); kept && !synced {
			w.rec.Broke(KeepAliveStale, "holder %d: %q keep-alive's end differs from the lock's (validity %v)", w.id, r, l.Validity())
		}
		if !live {
			// cancelled: lost, expired, limit, or the run ended; the
			// holder stops here
			letGo()
			return
		}
		if !now.Before(deadline) {
			break
		}
		if !u.Equal(curEnd) {
			claim(curStart, minTime(curEnd, now))
			curStart, curEnd = now, u
			w.kind = "kept-alive"
		}
		if selfExtend && rng.IntN(3) == 0 {
			var lost bool
			curStart, curEnd, lost = w.selfExtend(hctx, &l, r, curStart, curEnd, claim)
			if lost {
				letGo()
				return
			}
		}
		d := time.Until(minTime(deadline, time.Now().Add(look)))
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-hctx.Done():
		}
		t.Stop()
	}
	if crash {
		stop() // the process died: keep-alive stops, the lock is not released
		w.s.crashed.Add(1)
		if u := l.Until(); u.After(curEnd) { // an extension that ended meanwhile
			claim(curStart, curEnd)
			curStart, curEnd = time.Now(), u
			w.kind = "kept-alive-late"
		}
		claim(curStart, curEnd)
		return
	}
	relAt := time.Now()
	claim(curStart, minTime(curEnd, relAt))
	w.release(l, r)
}

// selfExtend is a kept-alive holder's own Extend: to a shorter TTL
// U[3ms, TTL/2) or a longer one U[TTL, 2 TTL), under hctx (the work's
// context, as a service would pass it), sometimes with a short deadline or
// an ended ctx. It cuts the claim where the call began and returns the
// claim after it, and whether the holder must stop (lost or expired).
func (w *worker) selfExtend(hctx context.Context, l *redlock.Lock, r string, from, end time.Time, claim func(from, to time.Time)) (time.Time, time.Time, bool) {
	cfg, h, rng := w.cfg, w.h, w.h.rng
	w.s.selfExt.Add(1)
	ttl := 3*time.Millisecond + time.Duration(rng.Int64N(int64(cfg.TTL/2)))
	if rng.IntN(2) == 0 {
		ttl = cfg.TTL + time.Duration(rng.Int64N(int64(cfg.TTL)))
	}
	base := context.WithValue(hctx, holderKey{}, h)
	ectx, cancel := w.endedCtx(base)
	defer cancel()
	if ectx == base && rng.Float64() < cfg.ExtendDeadlineRate {
		ectx, cancel = context.WithTimeout(base, 20*time.Microsecond+time.Duration(rng.Int64N(int64(2*time.Millisecond))))
		defer cancel()
	}
	// The keep-alive may have extended since the last look: read the
	// count first, then the end; a count that moved by more than this
	// call's own extension means the keep-alive ran around the call.
	ext := l.Extensions()
	if u := l.Until(); u.After(end) {
		now := time.Now()
		claim(from, minTime(end, now))
		from, end = now, u
		w.kind = "kept-alive-pre-self-extend"
	}
	call := time.Now()
	claim(from, minTime(end, call))
	h.fired = false
	err := l.Extend(ectx, ttl)
	if (errors.Is(err, redlock.ErrLockLost) || errors.Is(err, redlock.ErrLockExpired)) && hctx.Err() == nil {
		w.rec.Broke(KeepAliveOutlived, "holder %d: %q Extend said %v, the keep-alive context is still live", w.id, r, err)
	}
	ret := time.Now()
	after := l.Until()
	if err == nil {
		ext++
	}
	start, ok := w.checkExtend(r, ttl, end, call, ret, after, err, l.Extensions() != ext)
	w.kind = "self-" + w.kind
	if !ok {
		return start, after, true
	}
	return start, after, false
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// checkRelease records a BadReply for every node error of a release that
// is neither an integer reply nor a node-level failure.
func (w *worker) checkRelease(r string, err error) {
	var re *redlock.ReleaseError
	if !errors.As(err, &re) {
		return
	}
	for i, e := range re.Errs {
		var ne *mux.NodeError
		switch {
		case e == nil, errors.Is(e, mux.ErrTimeout), errors.Is(e, mux.ErrPending), errors.Is(e, mux.ErrNotSent),
			errors.As(e, &ne), errors.Is(e, redlock.ErrClosed), errors.Is(e, context.Canceled), errors.Is(e, context.DeadlineExceeded):
		default:
			node := -1
			if i < len(re.Failed) {
				node = re.Failed[i]
			}
			w.rec.Broke(BadReply, "holder %d: release of %q, node %d: %v", w.id, r, node, e)
		}
	}
}

// extend runs one extension: late (near the end of validity, full TTL) or
// early to a shorter TTL, sometimes under a short ctx deadline. It records
// the claim before the call (cut where the call began) and returns the
// claim after it.
func (w *worker) extend(ctx context.Context, l *redlock.Lock, r string, from, end time.Time, claim func(from, to time.Time)) (time.Time, time.Time) {
	cfg, h, rng := w.cfg, w.h, w.h.rng
	ttl := cfg.TTL
	if rng.IntN(2) == 0 {
		// late: with U[0, 3ms) of validity left
		sleepUntil(ctx, end.Add(-time.Duration(rng.Int64N(int64(3*time.Millisecond)))))
	} else {
		// early, to a shorter TTL: the validity drops to it at once (the
		// nodes keep the longer expiry: the script never shortens a key)
		sleepUntil(ctx, time.Now().Add(time.Duration(rng.Int64N(int64(ttl/4)+1))))
		ttl = 3*time.Millisecond + time.Duration(rng.Int64N(int64(ttl/2)))
	}
	ectx, cancel := w.endedCtx(ctx)
	defer cancel()
	if ectx == ctx && rng.Float64() < cfg.ExtendDeadlineRate {
		ectx, cancel = context.WithTimeout(ctx, 20*time.Microsecond+time.Duration(rng.Int64N(int64(2*time.Millisecond))))
		defer cancel()
	}
	call := time.Now()
	if call.Before(end) {
		claim(from, call)
	} else {
		claim(from, end)
	}
	h.fired = false
	err := l.Extend(ectx, ttl)
	ret := time.Now()
	after := l.Until()
	start, _ := w.checkExtend(r, ttl, end, call, ret, after, err, false)
	return start, after
}

// checkExtend counts an Extend (called at call, returned at ret, with the
// old claimed end end) and checks its contracts, unless another extension
// (the keep-alive's) ran just before or after it (interleaved); it returns
// where the claim after it starts, and false when the lock is lost or
// expired (the holder must stop).
func (w *worker) checkExtend(r string, ttl time.Duration, end, call, ret, after time.Time, err error, interleaved bool) (time.Time, bool) {
	h := w.h
	if interleaved {
		h.fired = false // another extension moved the end: the bounds below do not apply
	}
	w.kind = "extended"
	if err == nil {
		w.s.extended.Add(1)
		if h.fired && !h.at.Before(end) {
			w.rec.Broke(LateExtension, "holder %d: %q extended although its validity ended %v before the replies were in", w.id, r, h.at.Sub(end))
		}
		// the library's t1 came before the send, so before the hook's
		// reading: the new end is at most hook + ttl - drift
		if bound := h.at.Add(ttl - drift(ttl)); h.fired && after.After(bound) {
			w.rec.Broke(ExtendTooLong, "holder %d: %q extended %v beyond hook + ttl - drift", w.id, r, after.Sub(bound))
		}
		return call, true
	}
	w.kind = "extend-not-sent"
	var ee *redlock.ExtendError
	if errors.As(err, &ee) {
		w.kind = "extend-failed"
		w.s.extFailed.Add(1)
		// the nodes never shorten a key, and the ones that missed the
		// extension keep the old expiry: the old end is the bound
		if !interleaved && after.After(end) {
			w.rec.Broke(FailedExtendTooLong, "holder %d: %q failed extension (%v) left validity %v beyond the old end", w.id, r, err, after.Sub(end))
		}
		return ret, !ee.Lost && !ee.Expired
	} else if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) && !errors.Is(err, redlock.ErrExtendLimit) {
		w.note(err)
	}
	return ret, true
}

// sleepUntil sleeps until t or until ctx is done.
func sleepUntil(ctx context.Context, t time.Time) {
	d := time.Until(t)
	if d <= 0 {
		return
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
	case <-ctx.Done():
	}
}

// Leftovers checks availability after failed acquisitions: clients contend
// for the resources (no faults, no crashes, a TTL that outlives the run:
// MaxDuration + 15s, so that a key left behind at any moment is still there
// when the nodes are read), every holder releases, and then no key may
// remain on any node: a failed attempt must release on every node, those
// that granted it included, also when its ctx ended mid-attempt
// (AcquireCtxRate), and a Release must be sent whatever its ctx
// (EndedCtxRate). kl reads the nodes. The checker supplies the lock values
// (WithValueSource), so it knows which leftover belongs to a failed
// attempt and which to a holding that was released (also listed in
// Result.ReleasedLeftovers); both are Report.Leftovers.
func Leftovers(cfg Config, kl KeyLister) (Result, error) {
	cfg.CrashRate, cfg.HoldToEnd, cfg.ExtendRate, cfg.PauseRate = 0, 0, 0, 0
	cfg.Faults, cfg.StopOnViolation = nil, false
	if cfg.TTL <= 0 {
		// longer than the run: a key left behind at any moment is still
		// there when the nodes are read (a 15s TTL let the first keys of
		// a 25s run expire unseen)
		maxDur := cfg.MaxDuration
		if maxDur <= 0 {
			maxDur = time.Minute // Run's default
		}
		cfg.TTL = maxDur + 15*time.Second
	}
	if cfg.NodeTimeout <= 0 {
		cfg.NodeTimeout = 200 * time.Millisecond
	}
	vs := &valueSource{}
	cfg.Options = append(cfg.Options, redlock.WithValueSource(vs))
	won := &sync.Map{}
	cfg.won = won
	res, err := Run(cfg)
	if err != nil {
		return res, err
	}
	cfg.defaults()
	res.Leftovers = []string{}
	seen := map[string]bool{}
	// scan reports the keys left on any node, once each.
	scan := func() {
		for i := 0; i < cfg.Resources; i++ {
			key := fmt.Sprintf("checker:res:%d", i)
			vals, ttls := kl.KeyValues(key)
			for node, v := range vals {
				if v == nil {
					continue
				}
				id := fmt.Sprintf("%d %s %x", node, key, v)
				if seen[id] {
					continue
				}
				seen[id] = true
				desc := fmt.Sprintf("node %d %s value #%x pttl %v", node, key, v[:8], ttls[node].Round(time.Millisecond))
				if _, ok := won.Load(string(v)); ok {
					desc = "released holding: " + desc
					res.ReleasedLeftovers = append(res.ReleasedLeftovers, desc)
				}
				res.Leftovers = append(res.Leftovers, desc)
			}
		}
	}
	// Releases after failed attempts wait for one answer only; let the
	// others land. Every holding was released: what is left now was left
	// by the contended run.
	time.Sleep(100 * time.Millisecond)
	scan()
	if err := minorityAttempts(cfg, vs, won, kl); err != nil {
		return res, err // with the leftovers found so far (the test logs both)
	}
	time.Sleep(100 * time.Millisecond)
	scan()
	return res, nil
}

// minorityAttempts makes attempts that a minority of nodes grants: a
// blocker holds every resource on a bare majority of the nodes, and a
// client on all of them tries each resource a few times (each try is
// granted by the other nodes, refused by the majority, and must release
// what it got). Then the blocker releases.
func minorityAttempts(cfg Config, vs *valueSource, won *sync.Map, kl KeyLister) error {
	ctx := context.Background()
	q := len(cfg.Addrs)/2 + 1
	opts := []redlock.Option{redlock.WithTTL(cfg.TTL), redlock.WithNodeTimeout(cfg.NodeTimeout), redlock.WithValueSource(vs), redlock.WithTries(100)}
	blocker, err := redlock.New(cfg.Addrs[:q], opts...)
	if err != nil {
		return err
	}
	defer blocker.Close()
	c, err := redlock.New(cfg.Addrs, opts...)
	if err != nil {
		return err
	}
	defer c.Close()
	for i := 0; i < cfg.Resources; i++ {
		key := fmt.Sprintf("checker:res:%d", i)
		bl, err := blocker.Acquire(ctx, key)
		if err != nil {
			return fmt.Errorf("checker: blocker on a majority: %w", err)
		}
		v := bl.ValueArray()
		won.Store(string(v[:]), true)
		// the blocker returned at its quorum (2 of 3): wait until its
		// third SET landed too, or a contender could win that node first
		n := 0
		for wait := time.Now().Add(2 * time.Second); ; time.Sleep(time.Millisecond) {
			vals, _ := kl.KeyValues(key)
			n = 0
			for _, x := range vals[:q] {
				if string(x) == string(v[:]) {
					n++
				}
			}
			if n == q {
				break
			}
			if time.Now().After(wait) {
				break
			}
		}
		if n < q {
			// A node of the majority holds another value: a key left
			// behind by the contended run (Leftovers reports it), which
			// is what this check is for. Try the next resource (the
			// blocker's validity may have ended while it waited: its
			// release is best effort).
			_ = bl.Release(ctx)
			continue
		}
		for k := 0; k < 5; k++ {
			if l, err := c.TryAcquire(ctx, key); err == nil {
				_ = l.Release(ctx)
				return fmt.Errorf("checker: %q acquired while a majority held it", key)
			}
		}
		if err := bl.Release(ctx); err != nil {
			return fmt.Errorf("checker: blocker release: %w", err)
		}
	}
	return nil
}

// valueSource makes unique lock values: a counter and a fixed tail.
type valueSource struct{ n atomic.Uint64 }

func (v *valueSource) Read(p []byte) (int, error) {
	var b [redlock.ValueSize]byte
	x := v.n.Add(1)
	for i := 0; i < 8; i++ {
		b[i] = byte(x >> (56 - 8*i))
	}
	copy(b[8:], "redmux-check")
	return copy(p, b[:]), nil
}

// endCounter is a checker client's observer: it counts, per lock (Event.LockID),
// the keep-alive ends it is told of (OpKeepAliveEnd) and the lost ones;
// the holders note the keep-alives they started and those they saw end by
// themselves (started, ended).
type endCounter struct {
	mu    sync.Mutex
	ends  map[uint64]int  // OpKeepAliveEnd events per lock
	lost  map[uint64]bool // one of them said Lost
	kept  map[uint64]bool // keep-alives started
	self  map[uint64]bool // ended by themselves (true: lost or expired)
	nEnds int64
	nLost int64
}

func newEndCounter() *endCounter {
	return &endCounter{ends: map[uint64]int{}, lost: map[uint64]bool{}, kept: map[uint64]bool{}, self: map[uint64]bool{}}
}

func (o *endCounter) Observe(e redlock.Event) {
	if e.Op != redlock.OpKeepAliveEnd {
		return
	}
	o.mu.Lock()
	o.ends[e.LockID]++
	o.nEnds++
	if e.Lost() {
		o.lost[e.LockID] = true
		o.nLost++
	}
	o.mu.Unlock()
}

// started notes a keep-alive of the lock id begun by a holder.
func (o *endCounter) started(id uint64) {
	o.mu.Lock()
	o.kept[id] = true
	o.mu.Unlock()
}

// ended notes a keep-alive the holder saw end by itself (lost: lost or
// expired).
func (o *endCounter) ended(id uint64, lost bool) {
	o.mu.Lock()
	o.self[id] = lost
	o.mu.Unlock()
}

// checkEnds compares, per lock and once the clients are closed (every end
// is reported by then), the keep-alive ends each client's observer was
// told of with what the holders saw: every lock's end reported at most
// once, and only for a lock kept alive; a keep-alive that ended by itself
// reported, as lost when the holder saw it lost or expired. It returns
// the ends and lost ends reported in all.
func checkEnds(obs []*endCounter, rec *Recorder) (ends, lost int64) {
	for ci, o := range obs {
		o.mu.Lock()
		for id, n := range o.ends {
			switch {
			case !o.kept[id]:
				rec.Broke(KeepAliveEndReport, "client %d: %d keep-alive end(s) reported for lock %#x, never kept alive", ci, n, id)
			case n > 1:
				rec.Broke(KeepAliveEndReport, "client %d: lock %#x's keep-alive end reported %d times", ci, id, n)
			}
		}
		for id, wasLost := range o.self {
			switch {
			case o.ends[id] == 0:
				rec.Broke(KeepAliveEndReport, "client %d: lock %#x's keep-alive ended by itself (lost or expired: %v), not reported", ci, id, wasLost)
			case wasLost && !o.lost[id]:
				rec.Broke(KeepAliveEndReport, "client %d: lock %#x's keep-alive ended lost or expired, reported not lost", ci, id)
			}
		}
		ends, lost = ends+o.nEnds, lost+o.nLost
		o.mu.Unlock()
	}
	return ends, lost
}
