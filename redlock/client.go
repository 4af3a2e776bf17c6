package redlock

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redmux/redmux/internal/lockrule"
	"github.com/redmux/redmux/mux"
	"github.com/redmux/redmux/redlock/scripts"
	"github.com/redmux/redmux/resp"
)

// ValueSize is the length in bytes of a lock value.
const ValueSize = 20

// Client acquires Redlock locks on the N nodes of a mux client. It is safe
// for concurrent use; one Client per process (per set of nodes) is enough.
type Client struct {
	m      *mux.Client
	ownMux bool
	n      int
	addrs  []string
	quorum int
	def    lockSettings
	values io.Reader
	closed atomic.Bool
	pool   sync.Pool // *worker
	states sync.Pool // *lockState, recycled at Release
	ka     scheduler // keep-alive
	obs    Observer  // WithObserver; nil: none
	// fenceSeen is the highest fencing counter this Client has read or
	// written: a fenced acquisition's token guess is above it.
	fenceSeen atomic.Uint64
	trust     trusts        // the nodes' incarnations (incarnation.go)
	mk        markers       // the nodes' data-set markers and TTL record (marker.go)
	restored  atomic.Uint64 // keys put back by extensions (Lock.restore)
	obsPanics atomic.Uint64 // observer panics recovered (ObserverPanics)
	workers   atomic.Uint64 // workers made: each numbers its locks from its own base (Lock.ID)
	cluster   int           // a Redis Cluster node's index (keys must share a slot), or -1
	// unprotected: grants count every node that grants (tests' controls:
	// withoutQuarantine)
	unprotected bool
	// replica acknowledgements (wait.go): waitOff, none anywhere
	// (WithReplicaAcks(0)); waitPlain, how many on nodes other than
	// Sentinel nodes
	waitOff   bool
	waitPlain int
}

// worker is the per-call state: a mux batch, a command buffer, a random
// generator for values and jitter, and a reusable timer. Workers are pooled
// so that steady-state calls allocate nothing and no mutex is shared
// between concurrent callers.
type worker struct {
	b     *mux.Batch
	rng   *rand.ChaCha8
	cmd   []byte
	val   [ValueSize]byte
	timer *time.Timer
	nodes []nodeRec // the last failed attempt, per node
	dctx  detachedCtx
	guess uint64 // the fenced attempt's token guess
	// incs are the incarnations a fenced attempt's commands named (their
	// run_ids tag the counters); fencedOK, its Success predicate, counts
	// a node only while its incarnation is still that one.
	incs []*mux.Incarnation
	// tags: the tag each node's fenced command carried (fenceTag), by
	// which its answer is read; migrate: the nodes whose counter the
	// commands found of the string form (a bit each; migrateCounters)
	tags    []string
	migrate uint64
	// ans: each node's answer as fencedOK read it (where ansOK), so that
	// fence reads it once more only where the predicate did not run
	ans   []fencedAns
	ansOK []bool
	// lockN: per node, the acquisition's or extension's lock commands
	// (one, or a fenced single lock's three), before its WAIT (prepWait)
	lockN []int
	// the grants' SuccessAll predicates (a lock command, then the
	// marker's MGET): a SET NX's +OK, the multi-resource script's 1, the
	// fenced script's grant, each on a trusted node whose marker is the
	// accepted one (grantable). Made once per worker: Do allocates nothing.
	grantSet, grantMulti, fencedOK func(int, mux.Replies) bool
	// extendOK: an extension's script said 1, and its WAIT was met
	extendOK func(int, mux.Replies) bool
	// releaseOK: a release's script answered an integer, kept in relV
	// with the node's bit in relGot, so that Release counts the nodes
	// without reading the replies again; relGot is cleared before each
	// release (the predicate runs only while its call is live)
	releaseOK func(int, resp.Reply) bool
	relV      []int64
	relGot    uint64
	// waitN: the replica acknowledgements each node's command of this
	// call waits for (0: no WAIT; prepWait), encoded into wcmd
	waitN []int
	wcmd  []byte
	// where the attempt reads each node's marker (prepMarkers): the
	// anchor slot on a cluster node (-1 elsewhere), the data set's state,
	// and the MGET's encoding buffer
	anchor []int
	mstate []*markerNode
	mcmd   []byte
	// slot: the resource's hash slot, where a node is a cluster
	slot int
	// seen: what noteMarkers kept for markerWork; cb: the cold batch;
	// steady: the nodes whose MGET the grant predicate found steady (a bit
	// each; set on mux's reader, read after Do returns); want: the TTL
	// record (ms) a steady node holds
	seen   []markerSeen
	cb     *mux.Batch
	steady uint64
	want   int64
	// infoOn: the nodes whose acquisition reads INFO replication after its
	// MGET (no flush watch); histBad: those whose reply showed another
	// history than the judged one (set on mux's reader, like steady;
	// history.go)
	infoOn, histBad uint64
	// pend: the observer events of an operation under st.op (its node
	// errors, the incarnations it judged), delivered by flush once st.op
	// is released; room for 2N, so that keeping them allocates nothing
	pend []Event
	ids  uint64 // the ID of the last lock this worker acquired (Lock.ID)
}

// nodeRec is one node's answer to a failed attempt.
type nodeRec struct {
	status NodeStatus
	err    error
}

// epoch is the origin of the monotonic clock the package uses: every
// instant is stored as nanoseconds since epoch, measured with time.Since,
// which reads the monotonic clock. The wall clock is never used for
// validity.
var epoch = time.Now()

func mono() int64 { return int64(time.Since(epoch)) }

// MuxScripts returns the lock scripts in mux's form. A mux client passed to
// NewWithMux must have them in Config.Scripts so that EVALSHA hits and a
// NOSCRIPT reply falls back to EVAL.
func MuxScripts() []mux.Script {
	out := make([]mux.Script, 0, len(scripts.All)+len(scripts.Multi)+len(scripts.Fenced)+len(scripts.Markers))
	for _, s := range append(append(append(append([]scripts.Script(nil), scripts.All...), scripts.Multi...), scripts.Fenced...), scripts.Markers...) {
		out = append(out, mux.Script{Text: s.Text, SHA: s.SHA})
	}
	return out
}

// MuxConfig returns cfg completed with what a lock Client needs from its
// mux client. New builds its mux client from it; a program that builds its
// own for NewWithMux passes its mux.Config through it, so that the two
// cannot drift apart. It sets:
//   - Incarnations: the quarantine's input, restarts and failovers seen
//     (docs/OPERATIONS.md);
//   - WatchFlushes: a flush or resync told on the connection (rule 4);
//     without it every acquisition also reads INFO replication;
//   - Scripts: MuxScripts added to cfg's own (a script cfg already has,
//     by SHA, is kept once);
//   - ReconnectMax: DefaultReconnectMax when cfg leaves it 0, so a node back
//     from a restart counts again sooner.
//
// Everything else is cfg's own, Addrs and Timeout included.
func MuxConfig(cfg mux.Config) mux.Config {
	cfg.Incarnations = true
	cfg.WatchFlushes = true
	if cfg.ReconnectMax == 0 {
		cfg.ReconnectMax = DefaultReconnectMax
	}
	cfg.Scripts = mergeScripts(cfg.Scripts)
	return cfg
}

// New connects to the nodes at addrs (N independent Redis masters, each
// host:port or a node URL, redis://[[user]:password@]host[:port][/db] or
// rediss://... for TLS, with the options mux.Config.Addrs documents) and
// returns a Client whose Close also closes the connections. A URL's
// credentials, database and TLS settings are its node's own; WithMuxConfig's
// are the defaults. The password never appears in an error.
// Nodes that cannot be reached are redialled in the background (mux's
// behaviour); New fails on invalid options or addresses (ErrBadOption) or
// when mux.New fails.
func New(addrs []string, opts ...Option) (*Client, error) {
	cfg, err := buildConfig(len(addrs), opts)
	if err != nil {
		return nil, err
	}
	mc := MuxConfig(cfg.muxCfg)
	mc.Addrs = addrs
	if mc.Timeout <= 0 {
		mc.Timeout = cfg.lock.nodeTimeout
	}
	m, err := mux.New(mc)
	if errors.Is(err, mux.ErrConfig) {
		return nil, fmt.Errorf("%w: %w", ErrBadOption, err)
	}
	if err != nil {
		return nil, fmt.Errorf("redlock: %w", err)
	}
	if err := distinctServers(m); err != nil {
		m.Close()
		return nil, err
	}
	c := newClient(m, cfg)
	c.ownMux = true
	return c, nil
}

// distinctServers refuses a client two of whose nodes reported one run_id
// when New set them up: one server reached by two addresses (two names of
// one host, a proxy or a port forward) would count twice towards the
// quorum. mux.New has already refused two entries whose addresses name
// one server; this sees what addresses cannot tell. A node that was down
// or refused INFO at New is not compared.
func distinctServers(m *mux.Client) error {
	addrs := m.Addrs() // printable: passwords as ***
	seen := make(map[string]int, m.N())
	for i := 0; i < m.N(); i++ {
		p := m.Incarnation(i)
		if p == nil || !p.Known || p.RunID == "" {
			continue
		}
		if j, ok := seen[p.RunID]; ok {
			return fmt.Errorf("%w: nodes %d (%s) and %d (%s) are one server (run_id %.40q): a quorum counts independent masters, list each once",
				ErrBadOption, j, addrs[j], i, addrs[i], p.RunID)
		}
		seen[p.RunID] = i
	}
	return nil
}

// NewWithMux returns a Client over an existing mux client, built from a
// Config passed through MuxConfig, as New builds its own. Close does not
// close m. Without MuxScripts in its Config.Scripts, EVALSHA misses;
// without mux.Config.Incarnations the Client cannot see restarts and
// failovers, and quarantines nothing (docs/OPERATIONS.md); without
// mux.Config.WatchFlushes every acquisition also reads INFO replication
// (rule 4's third witness), which costs each pair client and server CPU.
func NewWithMux(m *mux.Client, opts ...Option) (*Client, error) {
	if m == nil {
		return nil, fmt.Errorf("%w: nil mux client", ErrBadOption)
	}
	cfg, err := buildConfig(m.N(), opts)
	if err != nil {
		return nil, err
	}
	if err := distinctServers(m); err != nil {
		return nil, err
	}
	return newClient(m, cfg), nil
}

func buildConfig(n int, opts []Option) (*clientConfig, error) {
	cfg := &clientConfig{lock: defaultLockSettings()}
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("%w: nil Option", ErrBadOption)
		}
		o.applyClient(cfg)
	}
	if n < 1 {
		return nil, fmt.Errorf("%w: no node addresses", ErrBadOption)
	}
	if cfg.quorum == 0 {
		//mutant:quorum-n2
		cfg.quorum = n/2 + 1
	}
	//mutant:quorum-n2
	if cfg.quorum <= n/2 || cfg.quorum > n {
		return nil, fmt.Errorf("%w: quorum %d of %d nodes (must be in [%d, %d])", ErrBadOption, cfg.quorum, n, n/2+1, n)
	}
	if err := cfg.lock.validate(); err != nil {
		return nil, err
	}
	if err := checkQuarantine(cfg); err != nil {
		return nil, err
	}
	if err := checkWait(cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

func mergeScripts(user []mux.Script) []mux.Script {
	out := append([]mux.Script(nil), user...)
	for _, s := range MuxScripts() {
		found := false
		for _, u := range user {
			if u.SHA == s.SHA {
				found = true
				break
			}
		}
		if !found {
			out = append(out, s)
		}
	}
	return out
}

func newClient(m *mux.Client, cfg *clientConfig) *Client {
	c := &Client{m: m, n: m.N(), addrs: m.Addrs(), quorum: cfg.quorum, def: cfg.lock, values: cfg.values, obs: cfg.obs, unprotected: cfg.unprotected,
		waitOff: cfg.waitSet && cfg.waitPlain == 0, waitPlain: cfg.waitPlain}
	c.pool.New = func() any { return c.newWorker() }
	c.states.New = func() any { return &lockState{c: c} }
	c.ka.c = c
	c.initTrust(cfg)
	c.setupMarkers()
	c.cluster = -1
	for i := 0; i < c.n; i++ {
		if m.IsCluster(i) {
			c.cluster = i
			//mutant:cluster-move-drift-ignored
			c.def.moveDrift = clusterMoveDrift
			break
		}
	}
	//mutant:trust-at-first-use
	if cfg.trustAtStart {
		// what New sees is trusted: every node's incarnation now
		for i := 0; i < c.n; i++ {
			if p := m.Incarnation(i); p != nil {
				c.judge(i, p, nil, true)
			}
		}
	}
	c.prime(cfg.trustAtStart)
	return c
}

// startTimeout is the least time New waits for the nodes' first answers
// (prime).
const startTimeout = 500 * time.Millisecond

func (c *Client) newWorker() *worker {
	var seed [32]byte
	_, _ = crand.Read(seed[:]) // never fails (Go 1.24: crashes the program instead)
	w := &worker{b: c.m.NewBatch(), rng: rand.NewChaCha8(seed), cmd: make([]byte, 0, 256), nodes: make([]nodeRec, c.n), incs: make([]*mux.Incarnation, c.n), tags: make([]string, c.n), ans: make([]fencedAns, c.n), ansOK: make([]bool, c.n), lockN: make([]int, c.n), relV: make([]int64, c.n), pend: make([]Event, 0, 2*c.n), seen: make([]markerSeen, c.n),
		anchor: make([]int, c.n), mstate: make([]*markerNode, c.n), mcmd: make([]byte, 0, 128), waitN: make([]int, c.n), wcmd: make([]byte, 0, 32)}
	w.ids = c.workers.Add(1) << 32 // 2^32 locks per worker before IDs could repeat
	w.grantSet = func(i int, rs mux.Replies) bool {
		return rs.At(0).IsOK() && w.grantable(c, i, rs)
	}
	w.grantMulti = func(i int, rs mux.Replies) bool {
		return isOne(i, rs.At(0)) && w.grantable(c, i, rs)
	}
	w.fencedOK = func(i int, rs mux.Replies) bool {
		var a fencedAns
		var ok bool
		if w.lockN[i] == pipeCmds {
			a, ok = fencedPipe(rs.At(pipeSet), rs.At(pipeRead), rs.At(pipeRaise), w.tags[i], w.guess)
		} else {
			a, ok = fencedReply(rs.At(w.lockN[i]-1), w.guess)
		}
		w.ans[i], w.ansOK[i] = a, ok
		return ok && a.granted && w.current(c, i, a) && w.grantable(c, i, rs)
	}
	w.extendOK = func(i int, rs mux.Replies) bool {
		return isOne(i, rs.At(0)) && w.acked(i, rs)
	}
	w.releaseOK = func(i int, r resp.Reply) bool {
		v, ok := r.Int()
		if ok {
			w.relV[i] = v
			w.relGot |= 1 << i
		}
		return ok
	}
	return w
}

// current reports whether node i's fenced answer a vouches for its
// counter: not stale, from the incarnation its command was tagged for,
// and that incarnation known. A node whose incarnation is unknown (it
// refuses INFO) cannot be told failed over, so its counter, which a
// promoted replica's older copy may have replaced, vouches for nothing
// (docs/FENCING.md, "Raise first", attack 4b). Nor does a node whose
// history a grant found replaced on a kept connection (history.go): its
// counters may be an older copy's, under the tag of the set-up's history,
// until a set-up judges the new one (a failover: stale counters).
func (w *worker) current(c *Client, i int, a fencedAns) bool {
	//mutant:fence-unknown-incarnation-counted,fence-history-replaced-counted
	return !a.stale && w.tags[i] != "" && c.m.Incarnation(i) == w.incs[i] && c.trust.nodes[i].hist.Load() == nil
}

// grantable reports whether node i's granting reply counts (rules 2 and
// 4, and the replicas' acknowledgement): the lock command, its WAIT (if
// any) and the marker's MGET (the last) ran on one process (none was
// redirected), the replicas acknowledged the grant, the node is trusted,
// and its marker is the accepted one with no young key.
func (w *worker) grantable(c *Client, i int, rs mux.Replies) bool {
	last := rs.Len() - 1
	// a lock command resent (NOSCRIPT's EVAL, a redirect) ran after the
	// MGET, and after the commands behind it: the marker would not be
	// evidence read after the grant, nor a fenced raise before its SET
	mg := w.layout(i) // the MGET; INFO replication after it on some nodes (history.go)
	if w.infoOn&(1<<i) != 0 {
		if last != mg+1 || rs.Redirected(mg) || !c.historyOK(w, i, rs.At(last)) {
			return false
		}
	} else if last != mg {
		return false
	}
	if rs.Redirected(last) || !w.acked(i, rs) {
		return false
	}
	for k := 0; k < w.lockN[i]; k++ {
		if rs.Resent(k) {
			return false
		}
	}
	ok, steady := markerCheck(w.mstate[i], rs.At(mg), w.want)
	if steady {
		w.steady |= 1 << i // noteMarkers passes over it
	}
	//mutant:marker-unchecked
	return c.unprotected || c.trusted(i) && ok && !c.slotMoved(w, i) && !c.shardYoung(w, i)
}

// shardYoung reports whether a shard of cluster node i (any, not only the
// one that granted w's resource) is known to hold a young data set: its
// slots may move with what it had, or had lost (Redis Cluster rule 6).
// False on any other node.
func (c *Client) shardYoung(w *worker, i int) bool {
	return w.anchor[i] >= 0 && c.clusterYoung(i)
}

// slotMoved reports whether cluster node i's shard that granted w's
// resource got its slot less than the quarantine ago (from another
// shard, which may have lost its keys before the move: docs/OPERATIONS.md,
// Redis Cluster rule 6). One atomic load on a cluster node; false on any
// other.
func (c *Client) slotMoved(w *worker, i int) bool {
	if w.anchor[i] < 0 {
		return false
	}
	t := c.m.SlotMoved(i, w.slot)
	//mutant:slot-move-counted
	if t.IsZero() {
		return false
	}
	return mono() < monoOf(t)+int64(c.trust.period(&c.def))
}

// layout is the index of node i's MGET in an acquisition batch: after the
// lock commands and their WAIT, if any.
func (w *worker) layout(i int) int {
	if w.waitN[i] > 0 {
		return w.lockN[i] + 1
	}
	return w.lockN[i]
}

func (c *Client) getWorker() *worker  { return c.pool.Get().(*worker) }
func (c *Client) putWorker(w *worker) { c.pool.Put(w) }

// Restored returns how many times an extension put a lock's key back on a
// node that had lost it (docs/OPERATIONS.md, rule 3), since New.
func (c *Client) Restored() uint64 { return c.restored.Load() }

// N returns the number of nodes.
func (c *Client) N() int { return c.n }

// Quorum returns the number of nodes that must agree.
func (c *Client) Quorum() int { return c.quorum }

// Close marks the client closed (later calls fail with ErrClosed), stops
// keep-alive (its contexts are cancelled with ErrClosed) and, for a client
// made by New, closes its connections. Locks still held are not
// released: their keys expire after their TTL.
func (c *Client) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	c.ka.close()
	if c.ownMux {
		return c.m.Close()
	}
	return nil
}

// newValue fills w.val with a fresh lock value.
func (c *Client) newValue(w *worker) error {
	if c.values != nil {
		if _, err := io.ReadFull(c.values, w.val[:]); err != nil {
			return fmt.Errorf("redlock: value source: %w", err)
		}
		return nil
	}
	//mutant:same-value
	_, _ = w.rng.Read(w.val[:]) // ChaCha8.Read never fails
	return nil
}

// retryDelay returns the wait after failed attempt number try (1, 2, ...)
// and whether to retry at all.
func (s *lockSettings) retryDelay(w *worker, try int) (time.Duration, bool) {
	switch {
	case s.retryFn != nil:
		d, ok := s.retryFn(try)
		if d < 0 {
			d = 0
		}
		return d, ok
	case s.backoffBase > 0:
		return backoff(s.backoffBase, s.backoffMax, try, w.rng.Uint64()), true
	}
	span := s.retryMax - s.retryMin
	if span <= 0 {
		return s.retryMin, true
	}
	return s.retryMin + time.Duration(w.rng.Uint64()%uint64(span)), true
}

// backoff is the exponential backoff with jitter after failed attempt try:
// d = min(max, base * 2^(try-1)), and the wait is drawn from [d/2, d] with
// the random number r.
func backoff(base, max time.Duration, try int, r uint64) time.Duration {
	d := max
	if try-1 < 62 {
		if x := base << (try - 1); x > 0 && x>>(try-1) == base && x < max {
			d = x
		}
	}
	half := d / 2
	return half + time.Duration(r%uint64(d-half+1))
}

// sleep waits d or until ctx is done, reusing the worker's timer.
func (w *worker) sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	if w.timer == nil {
		w.timer = time.NewTimer(d)
	} else {
		w.timer.Reset(d)
	}
	select {
	case <-w.timer.C:
		return nil
	case <-ctx.Done():
		w.timer.Stop()
		return ctx.Err()
	}
}

// Success predicates for mux (package-level: Do does not allocate).
var (
	isOne = mux.ReplyOne
	isInt = mux.ReplyInt
)

// ttlMillis is ttl in whole milliseconds, rounded up (lockrule.TTLMillis).
func ttlMillis(ttl time.Duration) int64 { return lockrule.TTLMillis(ttl) }

// detachedCtx is a context with the values of parent but without its
// cancellation or deadline: the context of the releases the algorithm
// owes (after a failed attempt, Release), which must be sent whatever
// happened to the caller's context. Their wait is bounded by the node
// timeout instead (the clean-up deadline). One lives in each pooled
// worker, so that using it allocates nothing (context.WithoutCancel
// would allocate on every call).
type detachedCtx struct{ parent context.Context }

func (detachedCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (detachedCtx) Done() <-chan struct{}       { return nil }
func (detachedCtx) Err() error                  { return nil }
func (d *detachedCtx) Value(key any) any        { return d.parent.Value(key) }

// cleanup returns the clean-up context for ctx (see detachedCtx). It is
// valid until w goes back to the pool.
func (w *worker) cleanup(ctx context.Context) context.Context {
	//mutant:cleanup-inherits-deadline
	w.dctx.parent = ctx
	return &w.dctx
}

// closedErr maps mux's closed error to ours: one fact, one message.
func closedErr(err error) error {
	if errors.Is(err, mux.ErrClosed) {
		return ErrClosed
	}
	return err
}
