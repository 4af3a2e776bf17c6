package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/redmux/redmux/bench/load"
	"github.com/redmux/redmux/internal/lockrule"
	"github.com/redmux/redmux/internal/nodeaddr"
	"github.com/redmux/redmux/mux"
	"github.com/redmux/redmux/redlock"
)

// muxStrategy is redmux: package redlock on one shared mux client (a few
// non-blocking connections per node shared by every worker, their commands
// pipelined; every node written before any reply is read; decisions at
// quorum).
type muxStrategy struct {
	c      *redlock.Client
	m      *mux.Client // owned: closed by Close
	n      int
	quorum int
	params lockParams
	fence  []redlock.LockOption // WithFencing for load.WorkloadFenced
	store  fencedCounter
}

// kindFencedStale counts fenced writes refused for a stale token
// (load.WorkloadFenced); it must stay 0.
const kindFencedStale = "fenced_stale"

// fencedCounter is the resource a fenced workload protects: per key, the
// highest fencing token written; a lower one is refused (stale).
type fencedCounter struct {
	mu  sync.Mutex
	top map[string]uint64
}

func (f *fencedCounter) write(key string, token uint64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if token < f.top[key] {
		return false
	}
	f.top[key] = token
	return true
}

func newMuxStrategy(addrs []string, p lockParams, conns int) (lockStrategy, error) {
	// what redlock.New's own mux client has (scripts, the restart and
	// flush watches, its reconnect cap), so the run measures what a
	// service runs
	m, err := mux.New(redlock.MuxConfig(mux.Config{
		Addrs: addrs, Conns: conns, DialTimeout: p.DialTimeout, Timeout: p.Timeout,
		Username: p.User, Password: p.Password, DB: p.DB, TLS: p.TLS,
		ClientName: "redmux-bench", DirectWait: p.DirectWait, Transport: p.Transport,
	}))
	if err != nil {
		return nil, err
	}
	if p.Transport != mux.TransportAuto && m.Transport() != p.Transport.String() && p.TLS == nil {
		// A run that asked for io_uring must not quietly measure epoll
		// (auto, mux's default, measures whatever mux picks).
		_ = m.Close()
		return nil, fmt.Errorf("-transport %s: the client runs %s", p.Transport, m.Transport())
	}
	// A node that refused the connection set-up for authentication fails
	// the run at once with the reason, rather than as node errors.
	for i := range addrs {
		if e := m.NodeErr(i); errors.Is(e, mux.ErrAuth) {
			_ = m.Close()
			if p.Password == "" && nodeaddr.URLPassword(addrs[i]) == "" {
				return nil, fmt.Errorf("node %s: %w", nodeaddr.RedactURL(addrs[i]), errAuthRequired)
			}
			return nil, fmt.Errorf("node %s: %w", nodeaddr.RedactURL(addrs[i]), errAuth)
		}
	}
	opts := []redlock.Option{
		redlock.WithTTL(p.TTL),
		redlock.WithNodeTimeout(p.Timeout),
		redlock.WithDriftFactor(p.DriftFactor),
		redlock.WithFixedDrift(p.DriftFixed),
		redlock.WithMaxExtensions(math.MaxInt),
		// Every node's release result, as seq and fanout count them: by
		// default Release returns nil once a quorum released, and the
		// down node's failures would go uncounted.
		redlock.WithStrictRelease(true),
	}
	if p.FreshNodes {
		opts = append(opts, redlock.WithTrustNodesAtStart())
	}
	if p.ReplicaAcks >= 0 {
		opts = append(opts, redlock.WithReplicaAcks(p.ReplicaAcks))
	}
	c, err := redlock.NewWithMux(m, opts...)
	if err != nil {
		_ = m.Close()
		return nil, err
	}
	// Nodes the lock may not count (up for less than the TTL: just started,
	// or restarted without the delay; or a data set without a marker, as
	// at the first use of a set of nodes) would fail every acquisition:
	// say so rather than measure failures.
	if q := c.Quarantined(); len(q) > c.N()-c.Quorum() {
		_ = c.Close()
		_ = m.Close()
		var b strings.Builder
		for i := range addrs {
			if left, ok := q[i]; ok {
				fmt.Fprintf(&b, "; node %s: %v left", nodeaddr.RedactURL(addrs[i]), left.Round(time.Millisecond))
			}
		}
		return nil, fmt.Errorf("%d of %d nodes started less than the lock's TTL ago, or their data sets are new to redmux clients (no data-set marker yet: the first use of these nodes): the lock quarantines them (docs/OPERATIONS.md)%s; wait, or pass -fresh-nodes if they hold no lock", len(q), c.N(), b.String())
	}
	s := &muxStrategy{c: c, m: m, n: c.N(), quorum: c.Quorum(), params: p, store: fencedCounter{top: map[string]uint64{}}}
	if p.Fencing {
		s.fence = []redlock.LockOption{redlock.WithFencing()}
	}
	return s, nil
}

func (s *muxStrategy) Name() string { return strategyMux }
func (s *muxStrategy) Close() error {
	_ = s.c.Close()
	return s.m.Close()
}

func (s *muxStrategy) NewWorker(context.Context) (load.Worker, error) {
	return &muxWorker{s: s, tally: make(nodeTally, s.n)}, nil
}

type muxWorker struct {
	s        *muxStrategy
	lock     redlock.Lock
	nodeErrs nodeErrCounts
	tally    nodeTally
}

// Acquire is TryAcquire: one attempt, no retry (as seq and fanout).
func (w *muxWorker) Acquire(ctx context.Context, key string) (bool, error) {
	l, err := w.s.c.TryAcquire(ctx, key, w.s.fence...)
	if err == nil {
		w.lock = l
		if w.s.fence != nil && !w.s.store.write(key, l.Token()) {
			w.nodeErrs.add(kindFencedStale, 1) // a token lower than one already written: must stay 0
		}
		return true, nil
	}
	var nae *redlock.NotAcquiredError
	if !errors.As(err, &nae) {
		return false, err
	}
	w.countNodeErrs(nae.Failed, nae.Refused, nae.Granted, nae.Pending)
	w.tallyNodes(nae)
	// Nodes still pending when redlock decided count as failed, as seq and
	// fanout count a node that did not answer within the timeout. Redlock
	// waits at most ttl - drift (no later answer could leave validity):
	// when that cut the wait short, the quorum was lost to the validity
	// rule, as seq and fanout find when the late answers arrive.
	switch {
	case nae.TooShort:
		return false, errValidity
	case nae.Err != nil:
		return false, nae.Err
	case lockrule.QuorumLost(nae.Failed+nae.Pending, w.s.quorum, w.s.n):
		if nae.Pending > 0 && w.s.params.TTL-w.s.params.drift() < w.s.params.Timeout {
			return false, errValidity
		}
		return false, errNoQuorum
	}
	return false, nil
}

// countNodeErrs counts the node failures of a failed attempt: nodes mux
// knows to be down as conn, the other failures as failed (redlock does not
// say which error a node gave). Nodes that had not answered when the
// outcome was decided are no error when the answers in hand decided it
// (refusals and failures made a quorum impossible, or a quorum granted but
// too late: the stragglers of a decided call are normal, and their replies
// are read and dropped); when
// the outcome waited on them, they timed out and count as pending.
func (w *muxWorker) countNodeErrs(failed, refused, granted, pending int) {
	if failed > 0 {
		down := 0
		for i := 0; i < w.s.n; i++ {
			if w.s.m.NodeErr(i) != nil {
				down++
			}
		}
		down = min(down, failed)
		if down > 0 {
			w.nodeErrs.add(kindConn, int64(down))
		}
		if failed > down {
			w.nodeErrs.add(kindFailed, int64(failed-down))
		}
	}
	decided := lockrule.QuorumLost(failed+refused, w.s.quorum, w.s.n) || granted >= w.s.quorum
	if pending > 0 && !decided {
		w.nodeErrs.add(kindPending, int64(pending))
	}
}

// tallyNodes notes, per node, the failures of a failed attempt, and the
// nodes whose missing answer the outcome waited on (as countNodeErrs).
func (w *muxWorker) tallyNodes(nae *redlock.NotAcquiredError) {
	decided := lockrule.QuorumLost(nae.Failed+nae.Refused, w.s.quorum, w.s.n) || nae.Granted >= w.s.quorum
	for _, r := range nae.Nodes {
		if r.Status == redlock.NodeFailed || r.Status == redlock.NodePending && !decided {
			w.tally.note(r.Node)
		}
	}
}

func (w *muxWorker) Extend(ctx context.Context) (bool, error) {
	err := w.lock.Extend(ctx, w.s.params.TTL)
	if err == nil {
		return true, nil // before errors.As, whose target escapes
	}
	var ee *redlock.ExtendError
	switch {
	case errors.As(err, &ee):
		if ee.Failed > 0 {
			w.nodeErrs.add(kindFailed, int64(ee.Failed))
		}
		if lockrule.QuorumLost(ee.Failed, w.s.quorum, w.s.n) {
			return false, errNoQuorum
		}
		return false, nil
	}
	return false, err
}

func (w *muxWorker) Release(ctx context.Context) error {
	err := w.lock.Release(ctx)
	if err == nil {
		return nil // before errors.As: its target would escape and allocate on every call
	}
	var re *redlock.ReleaseError
	if errors.As(err, &re) {
		for _, e := range re.Errs {
			w.nodeErrs.add(classify(e), 1)
		}
		for _, i := range re.Failed {
			w.tally.note(i)
		}
		if lockrule.QuorumLost(len(re.Failed), w.s.quorum, w.s.n) {
			return errNoQuorum
		}
		if !errors.Is(err, redlock.ErrLockExpired) && !errors.Is(err, redlock.ErrLockLost) {
			return nil
		}
	}
	return err
}

func (w *muxWorker) NodeErrors() map[string]int64  { return w.nodeErrs.snapshot() }
func (w *muxWorker) nodeErrCounts() *nodeErrCounts { return &w.nodeErrs }
func (w *muxWorker) nodeTally() nodeTally          { return w.tally }
func (w *muxWorker) Close() error                  { return nil }

// classifyMux names mux and redlock errors.
func classifyMux(err error) string {
	switch {
	case errors.Is(err, mux.ErrTimeout):
		return kindTimeout
	case errors.Is(err, mux.ErrNodeDown), errors.Is(err, mux.ErrConnBroken), errors.Is(err, mux.ErrNotSent):
		return kindConn
	case errors.Is(err, mux.ErrServer):
		return kindServer
	case errors.Is(err, mux.ErrProtocol):
		return kindProtocol
	case errors.Is(err, redlock.ErrValidityTooShort):
		return kindValidity
	case errors.Is(err, redlock.ErrLockLost), errors.Is(err, redlock.ErrLockExpired):
		return "lock_lost"
	}
	return ""
}
