package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redmux/redmux/internal/redisproc"
	"github.com/redmux/redmux/internal/redisproc/redistest"
	"github.com/redmux/redmux/redlock"
)

// TestSentinelFailoverSoak: REDMUX_SENTINEL_FAILOVERS (default 2) real
// failovers of a Sentinel-managed node with fenced locks in flight and
// kept alive. Node 0 of three is a Sentinel service (primary, replica, 3
// sentinels), nodes 1 and 2 standalone redis-servers. Four holders over
// two clients (on each client one that keeps its lock alive for 2-8 s, and
// until both clients followed a failover under way, and one that takes
// 5-50 ms holds) acquire three resources with WithFencing all along (TTL
// 3 s, so a 3 s quarantine). Each failover pauses the current
// primary (SIGSTOP), waits for the sentinels to promote the replica, waits
// for both clients to report node 0's failover to their observers
// (OpIncarnation, ErrNodeFailover) and checks that Quarantined shows it,
// then puts the old primary back as a replica (Rejoin) before the next.
//
// Asserted: no two holders of one resource inside their critical
// sections at once while the first one's validity had not ended when the
// second's attempt began (overlaps), tokens of one resource strictly
// increasing in the order the holds began (token regressions), every
// failover followed by both clients. Keep-alive losses are counted and
// reported with their cause (a loss is allowed: it ends a hold, it does
// not make two). Timings are reported, not asserted: this runs on shared
// machines. REDMUX_SOAK_SEED fixes the holders' random choices.
func TestSentinelFailoverSoak(t *testing.T) {
	failovers := soakEnvInt(t, "REDMUX_SENTINEL_FAILOVERS", 2)
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("REDMUX_SOAK_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("REDMUX_SOAK_SEED=%q", v)
		}
		seed = n
	}
	t.Logf("seed %d (REDMUX_SOAK_SEED), %d failovers (REDMUX_SENTINEL_FAILOVERS)", seed, failovers)
	g := redistest.StartSentinelGroup(t, redistest.SentinelOptions{})
	solo := redistest.StartN(t, 2, redistest.Options{})
	node0 := "redis-sentinel://" + g.SentinelAddrs()[0] + "?sentinelMasterId=" + g.Name +
		"&sentinel=" + g.SentinelAddrs()[1] + "&sentinel=" + g.SentinelAddrs()[2]
	addrs := []string{node0, solo[0].Addr, solo[1].Addr}

	s := newSoak(seed, 2)
	for i := range s.clients {
		s.obs[i] = &soakObs{}
		s.clients[i] = newClient(t, addrs, redlock.WithTTL(soakTTL), redlock.WithTrustNodesAtStart(),
			redlock.WithObserver(s.obs[i]), redlock.WithNodeTimeout(200*time.Millisecond))
	}
	for i := 0; i < 3; i++ {
		s.res = append(s.res, &soakRes{name: fmt.Sprintf("sentinel-soak:r%d", i)})
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		done := make(chan struct{})
		go func() { s.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Errorf("holders still running 60 s after the stop")
		}
	}
	defer stop() // before t.Cleanup closes the clients and stops the servers
	for id := 0; id < 4; id++ {
		s.wg.Add(1)
		go s.holder(ctx, id, id/2, id%2 == 0)
	}

	var runs []soakRun
	var last time.Time
	for f := 0; f < failovers; f++ {
		r := s.failover(t, g, f, last)
		last = r.paused
		runs = append(runs, r)
		t.Logf("failover %d: %s -> %s: sentinels switched %v after the pause; clients followed (OpIncarnation, ErrNodeFailover on node 0) %v and %v after it; quarantine %v (Quarantined: %v); kept-alive locks in flight at the pause %d, still kept alive once both clients followed %d; grants so far %d",
			f, r.old, r.new, r.switched.Round(time.Millisecond), r.followed[0].Round(time.Millisecond),
			r.followed[1].Round(time.Millisecond), r.quarantine.Round(time.Millisecond), r.seenQ, len(r.keptAtPause), r.keptThrough, s.grants.Load())
	}
	time.Sleep(2 * time.Second) // holds after the last failover
	stop()
	s.report(t, runs)
}

// soakTTL is the soak's lock TTL, so also the quarantine period.
const soakTTL = 3 * time.Second

// soakEnvInt reads a positive integer from the environment (def if unset).
func soakEnvInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q", name, v)
	}
	return n
}

// soakObs is an Observer that keeps node 0's failover reports with the
// time they arrived, and counts the other incarnation events and the
// keep-alive ends that lost a lock.
type soakObs struct {
	mu       sync.Mutex
	fo       []soakInc
	otherInc map[string]int
	kaLost   int
	kaLog    []soakEv // the last keep-alive events, to explain a loss
}

// soakEv is a keep-alive extension's event (OpKeepAlive, OpNodeError in
// one, OpKeepAliveEnd) with the time it arrived.
type soakEv struct {
	at time.Time
	e  redlock.Event
}

type soakInc struct {
	node  int
	at    time.Time
	left  time.Duration
	cause string
}

func (o *soakObs) Observe(e redlock.Event) {
	switch {
	case e.Op == redlock.OpIncarnation:
		var qe *redlock.QuarantineError
		at := time.Now()
		o.mu.Lock()
		if errors.As(e.Err, &qe) && errors.Is(qe, redlock.ErrNodeFailover) {
			o.fo = append(o.fo, soakInc{node: e.Node, at: at, left: e.Duration, cause: qe.Error()})
		} else {
			if o.otherInc == nil {
				o.otherInc = map[string]int{}
			}
			o.otherInc[fmt.Sprintf("node %d: %v", e.Node, e.Err)]++
		}
		o.mu.Unlock()
	case e.Op == redlock.OpKeepAlive || e.Op == redlock.OpKeepAliveEnd || (e.Op == redlock.OpNodeError && e.In == redlock.OpKeepAlive):
		at := time.Now()
		o.mu.Lock()
		if e.Op == redlock.OpKeepAliveEnd && e.Lost() {
			o.kaLost++
		}
		if len(o.kaLog) >= 4000 {
			o.kaLog = append(o.kaLog[:0], o.kaLog[2000:]...)
		}
		o.kaLog = append(o.kaLog, soakEv{at: at, e: e})
		o.mu.Unlock()
	}
}

// history describes the keep-alive events of the client's lock id
// (o.mu held).
func (o *soakObs) history(id uint64, t0 time.Time) []string {
	var out []string
	for _, v := range o.kaLog {
		e := v.e
		if e.LockID != id {
			continue
		}
		d := v.at.Sub(t0).Round(time.Millisecond)
		switch e.Op {
		case redlock.OpNodeError:
			out = append(out, fmt.Sprintf("+%v node %d error: %v", d, e.Node, e.Err))
		default:
			out = append(out, fmt.Sprintf("+%v %s took %v: %v", d, e.Op, e.Duration.Round(time.Millisecond), e.Err))
		}
	}
	return out
}

// after returns node's first failover report after t0.
func (o *soakObs) after(node int, t0 time.Time) (soakInc, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, f := range o.fo {
		if f.node == node && f.at.After(t0) {
			return f, true
		}
	}
	return soakInc{}, false
}

// soakRes is one resource: who is inside its critical section, and the
// last token recorded, both guarded by mu (taken only after acquisition).
type soakRes struct {
	name   string
	mu     sync.Mutex
	occ    *soakHold
	last   uint64
	lastBy string
}

// soakHold is one hold: began is when its acquisition attempt began.
type soakHold struct {
	holder int
	client int
	lock   redlock.Lock
	began  time.Time
	token  uint64
}

type soak struct {
	seed    uint64
	clients []*redlock.Client
	obs     []*soakObs
	res     []*soakRes
	wg      sync.WaitGroup

	grants, notAcquired, otherErrs   atomic.Int64
	overlaps, regressions            atomic.Int64
	lateExits, lateRecords, zeroToks atomic.Int64
	longHolds                        atomic.Int64
	pauses, followed                 atomic.Int64 // failovers begun, and followed by both clients
	pausedAt                         atomic.Int64 // the last pause, Unix ns

	mu      sync.Mutex
	notes   []string           // overlaps, regressions, losses: each described
	lost    []soakLoss         // keep-alive losses, explained in the report
	errs    map[string]int     // acquisition errors other than not acquired
	losses  map[string]int     // keep-alive losses by cause
	relErrs map[string]int     // failed releases by cause
	kept    map[*soakHold]bool // the holds kept alive now
}

// newSoak is a soak of n clients (made by the caller) with its holders'
// random choices from seed.
func newSoak(seed uint64, n int) *soak {
	return &soak{seed: seed, errs: map[string]int{}, kept: map[*soakHold]bool{},
		clients: make([]*redlock.Client, n), obs: make([]*soakObs, n)}
}

func (s *soak) note(format string, args ...any) {
	s.mu.Lock()
	if len(s.notes) < 200 {
		s.notes = append(s.notes, fmt.Sprintf(format, args...))
	}
	s.mu.Unlock()
}

// holder acquires random resources until ctx ends: long holders keep each
// lock alive for 2-8 s, short ones hold it 5-50 ms.
func (s *soak) holder(ctx context.Context, id, client int, long bool) {
	defer s.wg.Done()
	c := s.clients[client]
	rng := rand.New(rand.NewPCG(s.seed, uint64(id)))
	for i := 0; i < 1_000_000 && ctx.Err() == nil; i++ {
		r := s.res[rng.IntN(len(s.res))]
		began := time.Now()
		l, err := c.TryAcquire(ctx, r.name, redlock.WithFencing())
		if err != nil {
			s.acquireErr(ctx, err)
			soakSleep(ctx, time.Duration(5+rng.IntN(25))*time.Millisecond)
			continue
		}
		h := &soakHold{holder: id, client: client, lock: l, began: began, token: l.Token()}
		s.enter(r, h)
		if long {
			s.holdLong(ctx, r, h, time.Duration(2000+rng.IntN(6000))*time.Millisecond)
		} else {
			soakSleep(ctx, time.Duration(5+rng.IntN(45))*time.Millisecond)
		}
		s.exit(r, h)
		if err := l.Release(context.Background()); err != nil && !errors.Is(err, redlock.ErrLockExpired) {
			s.releaseErr(id, r, err)
		}
	}
}

// releaseErr counts a failed release by its cause. ErrReleasePartial is
// expected while node 0 is paused: a lock granted by node 0 and one other
// node is then deleted on one node only (the keys expire by their TTL).
func (s *soak) releaseErr(id int, r *soakRes, err error) {
	cause := "other"
	if errors.Is(err, redlock.ErrReleasePartial) {
		cause = "ErrReleasePartial"
	}
	s.mu.Lock()
	if s.relErrs == nil {
		s.relErrs = map[string]int{}
	}
	s.relErrs[cause]++
	s.mu.Unlock()
	s.note("holder %d release of %s: %v", id, r.name, err)
}

func (s *soak) acquireErr(ctx context.Context, err error) {
	switch {
	case ctx.Err() != nil:
	case errors.Is(err, redlock.ErrNotAcquired):
		s.notAcquired.Add(1)
	default:
		s.otherErrs.Add(1)
		msg := err.Error()
		if len(msg) > 160 {
			msg = msg[:160]
		}
		s.mu.Lock()
		if len(s.errs) < 50 {
			s.errs[msg]++
		}
		s.mu.Unlock()
	}
}

// enter records h inside r's critical section, after its acquisition.
// Another holder still inside is an overlap if its validity had not ended
// when h's attempt began (else it is only late leaving); h's token must be
// above every earlier one of r, unless h's own validity ended before it
// got here (a late record: the order of records is then not the order of
// grants).
func (s *soak) enter(r *soakRes, h *soakHold) {
	s.grants.Add(1)
	if h.token == 0 {
		s.zeroToks.Add(1)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if o := r.occ; o != nil {
		if until := o.lock.Until(); until.After(h.began) {
			s.overlaps.Add(1)
			s.note("OVERLAP on %s: holder %d (token %d, lock %v) granted while holder %d (token %d, valid until %v, %v after this attempt began) is inside",
				r.name, h.holder, h.token, h.lock, o.holder, o.token, until.Format(time.StampMicro), until.Sub(h.began))
		} else {
			s.lateExits.Add(1)
		}
	}
	switch {
	case h.token > r.last:
		r.last, r.lastBy = h.token, fmt.Sprintf("holder %d", h.holder)
	case h.lock.Validity() > 0:
		s.regressions.Add(1)
		s.note("TOKEN REGRESSION on %s: holder %d got %d after %d (%s)", r.name, h.holder, h.token, r.last, r.lastBy)
	default:
		s.lateRecords.Add(1)
	}
	r.occ = h
}

func (s *soak) exit(r *soakRes, h *soakHold) {
	r.mu.Lock()
	if r.occ == h {
		r.occ = nil
	}
	r.mu.Unlock()
}

// holdLong keeps h's lock alive for d (longer if a failover is under
// way then: until both clients followed it) or until ctx ends, and counts
// a keep-alive that ends first as a loss, with its cause. A loss is
// expected now and then: a lock granted by node 0 and one standalone node
// only (the other held a contender's key at that moment) cannot be
// extended once node 0 is paused or quarantined (one of the two live
// nodes holds it), and its validity ends (ErrLockExpired).
func (s *soak) holdLong(ctx context.Context, r *soakRes, h *soakHold, d time.Duration) {
	s.longHolds.Add(1)
	kctx, err := h.lock.KeepAlive(ctx)
	if err != nil {
		s.note("holder %d KeepAlive on %s: %v", h.holder, r.name, err)
		return
	}
	s.mu.Lock()
	s.kept[h] = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.kept, h)
		s.mu.Unlock()
	}()
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
	case <-kctx.Done():
	}
	// a hold still in flight when a primary is paused lasts until both
	// clients followed that failover
	for end := time.Now().Add(90 * time.Second); kctx.Err() == nil && s.pauses.Load() > s.followed.Load() && time.Now().Before(end); {
		soakSleep(kctx, 20*time.Millisecond)
	}
	if ctx.Err() != nil {
		return
	}
	if kctx.Err() != nil {
		cause := context.Cause(kctx)
		held := time.Since(h.began).Round(time.Millisecond)
		s.mu.Lock()
		if s.losses == nil {
			s.losses = map[string]int{}
		}
		s.losses[soakCause(cause)]++
		s.lost = append(s.lost, soakLoss{client: h.client, id: h.lock.ID(), began: h.began})
		s.mu.Unlock()
		s.note("keep-alive loss: holder %d %s token %d after %v, acquisition began %v after the last pause (failovers begun %d, followed %d; validity now %v): %v",
			h.holder, r.name, h.token, held, h.began.Sub(time.Unix(0, s.pausedAt.Load())).Round(time.Millisecond),
			s.pauses.Load(), s.followed.Load(), h.lock.Validity(), cause)
	}
}

// soakLoss is a keep-alive loss: the client, the lock and when its
// acquisition attempt began.
type soakLoss struct {
	client int
	id     uint64
	began  time.Time
}

// soakCause is an error's class for counting.
func soakCause(err error) string {
	switch {
	case errors.Is(err, redlock.ErrLockExpired):
		return "ErrLockExpired"
	case errors.Is(err, redlock.ErrLockLost):
		return "ErrLockLost"
	case errors.Is(err, redlock.ErrClosed):
		return "ErrClosed"
	}
	return fmt.Sprint(err)
}

func soakSleep(ctx context.Context, d time.Duration) {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
	case <-ctx.Done():
	}
}

// soakRun is one failover's figures.
type soakRun struct {
	old, new    string
	paused      time.Time
	switched    time.Duration
	followed    [2]time.Duration // per client: its first ErrNodeFailover report after the pause
	quarantine  time.Duration
	seenQ       bool        // Quarantined()[0] present on both clients once followed
	keptAtPause []*soakHold // the holds kept alive at the pause
	keptThrough int         // of them, those still kept alive once both clients followed
}

// failover runs failover f: it waits until the sentinels may fail over
// again (2 x failover-timeout after the last pause), node 0 is trusted by
// both clients and a kept-alive lock is in flight, pauses the primary,
// and waits for the sentinels' switch and both clients' reports; then the
// old primary rejoins as a replica.
func (s *soak) failover(t *testing.T, g *redisproc.SentinelGroup, f int, last time.Time) soakRun {
	t.Helper()
	old, err := g.Primary()
	if err != nil {
		t.Fatalf("failover %d: %v", f, err)
	}
	if wait := 6500*time.Millisecond - time.Since(last); !last.IsZero() && wait > 0 {
		time.Sleep(wait)
	}
	soakWait(t, 60*time.Second, func() bool {
		_, qa := s.clients[0].Quarantined()[0]
		_, qb := s.clients[1].Quarantined()[0]
		return !qa && !qb
	}, "failover %d: node 0 still quarantined 60 s on", f)
	for end := time.Now().Add(15 * time.Second); len(s.keptNow()) == 0 && time.Now().Before(end); {
		time.Sleep(20 * time.Millisecond)
	}
	r := soakRun{old: old.Addr, keptAtPause: s.keptNow()}
	r.paused = time.Now()
	s.pauses.Add(1)
	s.pausedAt.Store(r.paused.UnixNano())
	if err := old.Pause(); err != nil {
		t.Fatalf("failover %d: pause %s: %v", f, old.Addr, err)
	}
	nw, err := g.WaitFailover(old, 90*time.Second)
	if err != nil {
		t.Fatalf("failover %d: %v", f, err)
	}
	r.switched, r.new = time.Since(r.paused), nw.Addr
	var got [2]soakInc
	soakWait(t, 90*time.Second, func() bool {
		ok := true
		for i, o := range s.obs {
			var seen bool
			got[i], seen = o.after(0, r.paused)
			ok = ok && seen
		}
		return ok
	}, "failover %d: a client reported no failover of node 0 within 90 s of the pause", f)
	now := s.keptNow()
	for _, h := range r.keptAtPause {
		if slices.Contains(now, h) {
			r.keptThrough++
		}
	}
	s.followed.Add(1)
	_, qa := s.clients[0].Quarantined()[0]
	_, qb := s.clients[1].Quarantined()[0]
	r.seenQ = qa && qb
	for i := range got {
		r.followed[i] = got[i].at.Sub(r.paused)
	}
	r.quarantine = got[0].left
	if err := g.Rejoin(old, nw, 90*time.Second); err != nil {
		t.Fatalf("failover %d: rejoin %s: %v", f, old.Addr, err)
	}
	return r
}

// keptNow returns the holds kept alive now.
func (s *soak) keptNow() []*soakHold {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*soakHold
	for h := range s.kept {
		out = append(out, h)
	}
	return out
}

// soakWait polls cond every 20 ms for up to d.
func soakWait(t *testing.T, d time.Duration, cond func() bool, format string, args ...any) {
	t.Helper()
	for end := time.Now().Add(d); !cond(); {
		if time.Now().After(end) {
			t.Fatalf(format, args...)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// report logs the summary and asserts the outcomes.
func (s *soak) report(t *testing.T, runs []soakRun) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.notes {
		t.Log(n)
	}
	for _, l := range s.lost {
		o := s.obs[l.client]
		o.mu.Lock()
		t.Logf("keep-alive loss, client %d lock %d, its keep-alive events after its attempt began: %s", l.client, l.id, strings.Join(o.history(l.id, l.began), "; "))
		o.mu.Unlock()
	}
	var sw, fo, foFirst []time.Duration
	seenQ, atPause, through := 0, 0, 0
	for _, r := range runs {
		atPause += len(r.keptAtPause)
		through += r.keptThrough
		sw = append(sw, r.switched)
		fo = append(fo, max(r.followed[0], r.followed[1]))
		foFirst = append(foFirst, min(r.followed[0], r.followed[1]))
		if r.seenQ {
			seenQ++
		}
	}
	events := make([]int, len(s.obs))
	var other []string
	kaLost := 0
	for i, o := range s.obs {
		o.mu.Lock()
		events[i] = len(o.fo)
		for k, v := range o.otherInc {
			other = append(other, fmt.Sprintf("client %d %s x%d", i, k, v))
		}
		kaLost += o.kaLost
		o.mu.Unlock()
	}
	sort.Strings(other)
	t.Logf("acquisition errors other than not acquired: %v; other incarnation events: %v", s.errs, other)
	t.Logf("SUMMARY seed %d: %d failovers; %d fenced grants (%d holds kept alive; at the pauses %d kept-alive locks in flight, %d of them still kept alive once both clients followed; %d not acquired, %d other errors); overlaps %d; token regressions %d (late exits %d, late records %d, zero tokens %d); keep-alive losses %d %v (observer: %d); release errors %d %v; sentinels switched %s, clients followed (both) %s, first client %s (min/median/max after the pause); ErrNodeFailover events on node 0: %d and %d (clients A, B); Quarantined showed node 0 after %d of %d failovers; quarantine %v",
		s.seed, len(runs), s.grants.Load(), s.longHolds.Load(), atPause, through, s.notAcquired.Load(), s.otherErrs.Load(),
		s.overlaps.Load(), s.regressions.Load(), s.lateExits.Load(), s.lateRecords.Load(), s.zeroToks.Load(),
		soakSum(s.losses), s.losses, kaLost, soakSum(s.relErrs), s.relErrs, soakSpread(sw), soakSpread(fo), soakSpread(foFirst),
		events[0], events[1], seenQ, len(runs), soakQuarantine(runs))
	if s.overlaps.Load() != 0 || s.regressions.Load() != 0 {
		t.Errorf("SAFETY: %d overlaps, %d token regressions (seed %d; see the notes above)", s.overlaps.Load(), s.regressions.Load(), s.seed)
	}
	if s.zeroToks.Load() != 0 {
		t.Errorf("%d fenced grants without a token", s.zeroToks.Load())
	}
	if s.grants.Load() == 0 {
		t.Errorf("no grants")
	}
	for i, n := range events {
		if n < len(runs) {
			t.Errorf("client %d reported %d failovers of node 0 for %d failovers", i, n, len(runs))
		}
	}
	if s.losses["ErrLockLost"] > 0 {
		t.Logf("NOTE: %d keep-alive losses with ErrLockLost (a quorum no longer held the value before the validity ended): see the notes above", s.losses["ErrLockLost"])
	}
}

func soakSum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// soakSpread formats min/median/max of ds.
func soakSpread(ds []time.Duration) string {
	if len(ds) == 0 {
		return "-"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	r := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	return r(s[0]) + "/" + r(s[len(s)/2]) + "/" + r(s[len(s)-1])
}

// soakQuarantine lists the distinct quarantine periods reported.
func soakQuarantine(runs []soakRun) string {
	var qs []string
	for _, r := range runs {
		q := r.quarantine.Round(100 * time.Millisecond).String()
		if !slices.Contains(qs, q) {
			qs = append(qs, q)
		}
	}
	return strings.Join(qs, ", ")
}
