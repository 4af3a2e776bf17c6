package bench

import (
	"context"
	crand "crypto/rand"
	"crypto/tls"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redmux/redmux/bench/load"
	"github.com/redmux/redmux/internal/lockcmd"
	"github.com/redmux/redmux/internal/lockrule"
	"github.com/redmux/redmux/mux"
	"github.com/redmux/redmux/redlock/scripts"
	"github.com/redmux/redmux/resp"
)

// Strategy names.
const (
	strategySeq    = "seq"
	strategyFanout = "fanout"
	strategyMux    = "mux"
)

// allStrategies lists the strategies in report order.
var allStrategies = []string{strategySeq, strategyFanout, strategyMux}

// lockStrategy makes workers that share whatever the strategy shares (nothing
// for seq and fanout, one client for mux).
type lockStrategy interface {
	Name() string
	NewWorker(ctx context.Context) (load.Worker, error)
	Close() error
}

// lockParams are the Redlock parameters every strategy uses, so that the
// comparison is fair.
type lockParams struct {
	TTL         time.Duration // lock time to live
	Timeout     time.Duration // per-node timeout
	DialTimeout time.Duration
	DriftFactor float64       // validity = ttl - elapsed - (ttl*DriftFactor + DriftFixed)
	DriftFixed  time.Duration //
	User        string
	Password    string
	DB          int
	TLS         *tls.Config   // every node over TLS (nil: only rediss:// nodes)
	Fencing     bool          // load.WorkloadFenced: acquire with a fencing token and write it (mux only)
	DirectWait  time.Duration // mux only: mux.Config.DirectWait
	Transport   mux.Transport // mux only: mux.Config.Transport
	// FreshNodes: the run started the nodes itself (embedded fake,
	// -real-local): the lock trusts them at first sight
	// (redlock.WithTrustNodesAtStart); nodes given with -nodes are judged
	// by their uptime, as a service's client would (docs/OPERATIONS.md).
	FreshNodes bool
	// ReplicaAcks: mux only: redlock.WithReplicaAcks, when >= 0
	ReplicaAcks int
}

func (p lockParams) drift() time.Duration {
	return lockrule.Drift(p.TTL, p.DriftFactor, p.DriftFixed)
}

// plainStrategy is seq or fanout: plain blocking connections, one per node
// per worker, and the Redlock decision logic below.
type plainStrategy struct {
	name     string
	parallel bool
	addrs    []string
	params   lockParams
	opt      connOpts
	// silent marks the nodes whose set-up timed out (a node that accepts
	// and never answers: -fault blackhole): later workers do not wait for
	// it again at set-up, and connect on first use, within the per-node
	// timeout, as after any lost connection.
	silent []atomic.Bool
}

// newPlainStrategy returns the seq (parallel=false) or fanout strategy.
func newPlainStrategy(name string, parallel bool, addrs []string, p lockParams) *plainStrategy {
	return &plainStrategy{name: name, parallel: parallel, addrs: addrs, params: p, silent: make([]atomic.Bool, len(addrs)), opt: connOpts{tls: p.TLS,
		user: p.User, password: p.Password, db: p.DB, dialTimeout: p.DialTimeout, timeout: p.Timeout,
	}}
}

func (s *plainStrategy) Name() string { return s.name }
func (s *plainStrategy) Close() error { return nil }

// NewWorker dials one connection per node. A node that cannot be reached is
// left closed and redialled on use (its failures count in the results), so
// a fault scenario with a down node still runs.
func (s *plainStrategy) NewWorker(ctx context.Context) (load.Worker, error) {
	var seed [32]byte
	if _, err := crand.Read(seed[:]); err != nil {
		return nil, err
	}
	n := len(s.addrs)
	w := &plainWorker{
		parallel: s.parallel, params: s.params, drift: s.params.drift(), quorum: lockrule.Quorum(n),
		rng: rand.NewChaCha8(seed), conns: make([]*plainConn, n), res: make([]nodeRes, n),
		cmds: make([][]byte, n), tally: make(nodeTally, n),
	}
	for i, a := range s.addrs {
		w.conns[i] = newPlainConn(a, &s.opt)
		w.cmds[i] = make([]byte, 0, 256)
		if s.silent[i].Load() {
			continue
		}
		if err := w.conns[i].connect(ctx, s.opt.dialTimeout); err != nil {
			w.nodeErrs.add(classify(err), 1)
			w.tally.note(i)
			if classify(err) == kindTimeout {
				s.silent[i].Store(true)
			}
		}
	}
	return w, nil
}

type nodeRes struct {
	ok  bool
	err error
}

// plainWorker implements Redlock over plain connections. seq visits the
// nodes one after the other; fanout starts a goroutine per node per
// operation and waits for all of them (as common Go clients do).
type plainWorker struct {
	parallel bool
	params   lockParams
	drift    time.Duration
	quorum   int
	rng      *rand.ChaCha8
	conns    []*plainConn
	res      []nodeRes
	cmds     [][]byte
	wg       sync.WaitGroup
	nodeErrs nodeErrCounts
	tally    nodeTally

	key        string
	value      [20]byte
	held       bool
	validUntil time.Time
}

type check func(resp.Reply) bool

func isOK(r resp.Reply) bool { return r.IsOK() }
func isOne(r resp.Reply) bool {
	v, ok := r.Int()
	return ok && v == 1
}

// run sends w.cmds[i] to node i (sequentially or with a goroutine per node)
// and fills w.res. A NOSCRIPT reply is answered by resending the command as
// EVAL with the script's text (fallback), as the mux client does.
func (w *plainWorker) run(ctx context.Context, ok check, script *scripts.Script, ttlArg int64) (succ, fail int) {
	if w.parallel {
		w.wg.Add(len(w.conns))
		for i := range w.conns {
			go func(i int) {
				defer w.wg.Done()
				w.one(ctx, i, ok, script, ttlArg)
			}(i)
		}
		w.wg.Wait()
	} else {
		for i := range w.conns {
			w.one(ctx, i, ok, script, ttlArg)
		}
	}
	for i := range w.res {
		if w.res[i].err != nil {
			w.nodeErrs.add(classify(w.res[i].err), 1)
			w.tally.note(i)
			fail++
		} else if w.res[i].ok {
			succ++
		}
	}
	return succ, fail
}

// one runs node i's command and stores its result in w.res[i].
func (w *plainWorker) one(ctx context.Context, i int, ok check, script *scripts.Script, ttlArg int64) {
	r, err := w.conns[i].do(ctx, w.cmds[i])
	if err == nil && script != nil && r.HasErrorPrefix("NOSCRIPT") {
		var b []byte
		if ttlArg > 0 {
			b = lockcmd.AppendEvalInt(nil, script.Text, w.key, w.value[:], ttlArg)
		} else {
			b = lockcmd.AppendEval(nil, script.Text, w.key, w.value[:])
		}
		r, err = w.conns[i].do(ctx, b)
	}
	switch {
	case err != nil:
		w.res[i] = nodeRes{err: err}
	case r.IsError():
		w.res[i] = nodeRes{err: fmt.Errorf("%w: %s", errServerReply, r.ErrorText())}
	default:
		w.res[i] = nodeRes{ok: ok(r)}
	}
}

// Acquire: SET key value NX PX ttl on every node; acquired when a quorum
// said OK and validity = ttl - elapsed - drift is still positive. Otherwise
// the lock is released on ALL nodes before returning.
func (w *plainWorker) Acquire(ctx context.Context, key string) (bool, error) {
	w.key = key
	w.held = false
	w.rng.Read(w.value[:])
	ttlMs := lockrule.TTLMillis(w.params.TTL)
	for i := range w.cmds {
		w.cmds[i] = lockcmd.AppendSetNXPX(w.cmds[i][:0], key, w.value[:], ttlMs)
	}
	t1 := time.Now()
	succ, fail := w.run(ctx, isOK, nil, 0)
	validity := w.params.TTL - time.Since(t1) - w.drift
	if lockrule.Acquired(succ, w.quorum, validity, 0) {
		w.held = true
		w.validUntil = t1.Add(w.params.TTL - w.drift)
		return true, nil
	}
	w.releaseAll(ctx)
	switch {
	case succ >= w.quorum:
		return false, errValidity
	case lockrule.QuorumLost(fail, w.quorum, len(w.conns)):
		return false, errNoQuorum
	}
	return false, nil
}

// Extend: compare-and-pexpire on every node; extended when a quorum agreed
// before the current validity ran out.
func (w *plainWorker) Extend(ctx context.Context) (bool, error) {
	if !w.held {
		return false, nil
	}
	ttlMs := lockrule.TTLMillis(w.params.TTL)
	for i := range w.cmds {
		w.cmds[i] = lockcmd.AppendEvalSHAInt(w.cmds[i][:0], scripts.Extend.SHA, w.key, w.value[:], ttlMs)
	}
	t1 := time.Now()
	succ, fail := w.run(ctx, isOne, &scripts.Extend, ttlMs)
	now := time.Now()
	if succ >= w.quorum && now.Before(w.validUntil) && w.params.TTL-now.Sub(t1)-w.drift > 0 {
		w.validUntil = t1.Add(w.params.TTL - w.drift)
		return true, nil
	}
	if lockrule.QuorumLost(fail, w.quorum, len(w.conns)) {
		return false, errNoQuorum
	}
	return false, nil
}

// Release runs compare-and-delete on every node. It fails only when so many
// nodes failed that the lock may still be held by a quorum.
func (w *plainWorker) Release(ctx context.Context) error {
	w.held = false
	if fail := w.releaseAll(ctx); lockrule.QuorumLost(fail, w.quorum, len(w.conns)) {
		return errNoQuorum
	}
	return nil
}

func (w *plainWorker) releaseAll(ctx context.Context) int {
	for i := range w.cmds {
		w.cmds[i] = lockcmd.AppendEvalSHA(w.cmds[i][:0], scripts.Release.SHA, w.key, w.value[:])
	}
	_, fail := w.run(ctx, isOne, &scripts.Release, 0)
	return fail
}

func (w *plainWorker) NodeErrors() map[string]int64  { return w.nodeErrs.snapshot() }
func (w *plainWorker) nodeErrCounts() *nodeErrCounts { return &w.nodeErrs }
func (w *plainWorker) nodeTally() nodeTally          { return w.tally }

func (w *plainWorker) Close() error {
	for _, c := range w.conns {
		c.close()
	}
	return nil
}
