package mux

import (
	"context"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Client talks to N nodes over Config.Conns connections per node, shared by
// every caller. Methods are safe for concurrent use. See the package
// documentation.
type Client struct {
	cfg     *resolved
	n       int
	nodes   []node
	kinds   []nodeKinds // per node; shared with every batch
	conns   []*pconn    // node i's connections are conns[base[i]:base[i+1]]
	base    []int       // Conns per node; MaxClusterShards x Conns per cluster node (shard k's at base[i]+k*Conns)
	slotted bool        // some node routes batches by key (batches then compute their key's slot)
	drv     driver
	// transport names the driver that runs ("epoll", "io_uring",
	// "net.Conn"), with why io_uring was refused when it was asked for.
	transport string

	closed  atomic.Bool
	active  atomic.Int32  // callers between their first send and their wait
	batches atomic.Uint32 // NewBatch count: spreads batches over the wait registry's shards
	done    chan struct{} // closed by Close
	supWG   sync.WaitGroup
	closeM  sync.Mutex

	life     context.Context // cancelled by Close (aborts name look-ups and dials)
	lifeStop context.CancelFunc
}

// lookup resolves host (an IP literal needs no look-up) for a dial.
func (c *Client) lookup(host string, deadline time.Time) ([]netip.Addr, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{ip}, nil
	}
	ctx, cancel := context.WithDeadline(c.life, deadline)
	defer cancel()
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, &setupError{step: "resolve", text: err.Error()}
	}
	return ips, nil
}

// mono is the monotonic clock in nanoseconds since the package started.
var monoBase = time.Now()

func mono() int64 { return int64(time.Since(monoBase)) }

// New validates cfg and dials every connection (nodes in parallel, bounded
// by DialTimeout). It fails only on a bad config (ErrConfig): a node that
// cannot be reached or set up (for example a wrong password) is marked
// down, calls count it as failed at once (ErrNodeDown, with the dial error
// as cause; see NodeErr), and it is redialled in the background with
// capped, jittered backoff.
func New(cfg Config) (*Client, error) {
	r, err := resolve(cfg)
	if err != nil {
		return nil, err
	}
	c := &Client{
		cfg:   r,
		n:     len(r.Addrs),
		nodes: make([]node, len(r.Addrs)),
		kinds: make([]nodeKinds, len(r.Addrs)),
		done:  make(chan struct{}),
	}
	c.life, c.lifeStop = context.WithCancel(context.Background())
	r.flushed = c.noteFlush
	if r.Incarnations {
		r.learn = func(i, g int, inc *Incarnation) { c.nodes[i].topo.learn(c, i, g, inc) }
	}
	for i := range c.nodes {
		c.nodes[i].addr = r.Addrs[i]
		c.nodes[i].wake = make(chan struct{}, 1)
		c.nodes[i].down.Store(true)
		c.nodes[i].downErr.Store(&NodeError{Node: i, Addr: r.Addrs[i], Kind: ErrNodeDown, Cause: errNotConnected})
		mk := func(kind error) *NodeError { return &NodeError{Node: i, Addr: r.Addrs[i], Kind: kind} }
		c.kinds[i] = nodeKinds{pending: mk(ErrPending), timeout: mk(ErrTimeout), notSent: mk(ErrNotSent), closed: mk(ErrClosed),
			secrets: r.nodes[i].secrets()}
		c.setTopology(i, &r.nodes[i])
	}
	for i := 0; i < c.n; i++ {
		c.base = append(c.base, len(c.conns))
		for s := 0; s < c.nodes[i].topo.groups(); s++ {
			for k := 0; k < r.Conns; k++ {
				c.conns = append(c.conns, &pconn{c: c, node: i, shard: s, idx: len(c.conns)})
			}
		}
	}
	c.base = append(c.base, len(c.conns))
	c.drv, err = newDriver(c)
	if err != nil {
		c.lifeStop()
		return nil, err
	}
	// Dial: nodes in parallel, each as its topology says (a plain node's
	// connections until the first failure, the rest left to the
	// supervisor; a cluster node's shards each on its own).
	var wg sync.WaitGroup
	for i := 0; i < c.n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if c.nodes[i].topo.connect(c, i) {
				c.nodes[i].down.Store(false)
			}
		}(i)
	}
	wg.Wait()
	c.supWG.Add(c.n)
	for i := 0; i < c.n; i++ {
		go c.supervise(i)
		c.nodes[i].topo.background(c, i)
	}
	return c, nil
}

// Transport names the transport that drives the client's connections:
// "epoll", "io_uring" or "net.Conn" (see Transports in the package
// documentation). When Config.Transport asked for io_uring and the kernel
// refused it, it says so: "epoll (io_uring refused: ...)".
func (c *Client) Transport() string { return c.transport }

// N returns the number of nodes.
func (c *Client) N() int { return c.n }

// Addrs returns the nodes' addresses, in order (a copy).
func (c *Client) Addrs() []string { return append([]string(nil), c.cfg.Addrs...) }

// Do queues every node's commands of b on that node's connection (the one
// b's key picks; see Batch.SetKey) and writes them, combined with the
// commands other goroutines queued at the same time, then waits until p is
// met: every node answered, or (p.Quorum > 0) the quorum outcome is
// decided, or the deadline passed (p.Timeout, default Config.Timeout,
// measured from the call and bounded by ctx's deadline). The deadline
// covers the whole call: a node whose commands could not be queued before
// it (its write queue full) fails with ErrTimeout and is never written.
//
// Per-node replies and errors are in b (Reply, Last, Err); Do resets b's
// results itself, first of all (also when it returns an error before
// sending: the nodes then say ErrNotSent), so a batch may be run again
// without Reset and never shows an earlier call's reply. err is
// non-nil only when ctx was done before anything was queued (ctx.Err(),
// with the zero Outcome), when ctx ended while waiting (ctx.Err(), with the
// Outcome so far; a deadline that came from ctx gives
// context.DeadlineExceeded), on ErrClosed, on ErrBadBatch, or when
// p.Success panicked (a *PanicError, ErrPolicyPanic). Replies that
// arrive after Do returned are read and dropped.
func (c *Client) Do(ctx context.Context, b *Batch, p Policy) (Outcome, error) {
	if b == nil {
		return Outcome{}, ErrBadBatch
	}
	if err := c.check(ctx, b, p); err != nil {
		b.clearResults() // no earlier call's reply may pass for this one's
		return Outcome{}, err
	}
	start := mono()
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = c.cfg.Timeout
	}
	deadline := start + int64(timeout)
	ctxDeadline := false
	if d, ok := ctx.Deadline(); ok {
		if dl := int64(d.Sub(monoBase)); dl <= deadline {
			deadline, ctxDeadline = dl, true
		}
	}
	b.mu.Lock()
	b.begin(p)
	gen := b.call.gen
	b.mu.Unlock()
	aw, _ := c.drv.(awaiter)
	if aw != nil && aw.enter(deadline) {
		start = mono() // enter waited: the first pass judges the deadline by the clock now
	}

	// A lone caller writes at once. With other callers in Do, a caller
	// that finds a connection's writer idle claims it, lets the others run
	// (they append to the claimed queues), then writes: their commands
	// leave in one write per connection (pconn.send).
	//
	// Nodes whose queue is full (MaxQueuedBytes, MaxPending) are passed
	// over at first and waited for after every other node's commands are
	// queued: a slow node delays no other node's commands. A call that is
	// decided by then does not wait: its full nodes fail with ErrNotSent.
	hold := c.active.Add(1) > 1
	claims := b.claims[:0]
	var full uint64 // nodes passed over (MaxNodes is 64)
	for pass := 0; pass < 2; pass++ {
		for i := 0; i < c.n; i++ {
			if len(b.cmds[i]) == 0 || (pass == 1 && full&(1<<i) == 0) {
				continue
			}
			var err error
			now := start // the first pass waits for nothing: one clock read serves it
			if pass == 1 {
				now = mono() // the nodes before this one may have waited for room
			}
			if now >= deadline {
				err = kindErr(b.kinds, i, ErrNotSent)
			} else if pass == 1 && b.isSettled() {
				err = kindErr(b.kinds, i, ErrNotSent)
			} else {
				cn := c.conns[c.base[i]+int(b.route%uint32(c.cfg.Conns))]
				if c.nodes[i].routes {
					cn, err = c.nodes[i].topo.conn(c, i, b)
				}
				if cn != nil {
					var claimed bool
					claimed, err = cn.send(b, gen, deadline, c.done, hold, pass == 0, &claims)
					if claimed {
						claims = append(claims, cn)
					}
				}
			}
			if err == errMustWait {
				full |= 1 << i
				continue
			}
			if err != nil {
				b.mu.Lock()
				b.failNode(i, err)
				b.mu.Unlock()
			}
		}
		if full == 0 {
			break
		}
	}
	if len(claims) > 0 && aw != nil && aw.handOff(claims) {
		clear(claims) // the holder writes them (handOff)
		claims = claims[:0]
	}
	if len(claims) > 0 {
		yieldAndFlush(&claims)
	}
	b.claims = claims

	var err error
	settled := b.isSettled()
	if aw != nil {
		aw.sent(settled)
	}
	switch {
	case settled:
	case aw != nil:
		err = aw.await(ctx, b, deadline, ctxDeadline)
	default:
		err = b.wait(ctx, deadline, ctxDeadline, c.done)
	}
	c.active.Add(-1)
	b.mu.Lock()
	out := b.end(err == ErrClosed)
	if pe := b.call.panicked; pe != nil {
		err = pe
	}
	b.mu.Unlock()
	return out, err
}

// claimYields is how many times a claimer yields before it writes
// (yieldAndFlush).
const claimYields = 2

// yieldAndFlush is a claimer's write (Do): it lets the others append to
// its claimed writers, then writes them.
func yieldAndFlush(claims *[]*pconn) {
	// Yielding lets the other callers append to the claimed writers:
	// socket writes per lock operation at -c 64 fell from 8.9 to about
	// one and mux went from 2.7x fanout's throughput to 7.6x
	// (results/pipelining/README.md). A lone caller has no claims.
	//
	// Twice: a goroutine that yields waits in the global run queue,
	// which a P looks at once in 61 schedules, so one yield let at
	// most about 60 callers append (claimers' writes at 256 callers
	// peaked at 50-60 SETs). Two: 0.956x the client CPU per lock pair
	// at -c 256 (BenchmarkAcquireRelease256, 16 of 16 pairs cheaper);
	// a third measured nothing more (results/cost, tenth session).
	for range claimYields {
		runtime.Gosched()
	}
	flushClaims(claims)
}

// check returns the error Do returns before starting a call, or nil.
func (c *Client) check(ctx context.Context, b *Batch, p Policy) error {
	if c.closed.Load() {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if b.n != c.n || b.bad != nil || p.Quorum < 0 {
		return ErrBadBatch
	}
	for i := 0; i < b.n; i++ {
		if len(b.cmds[i]) > 0 {
			return nil
		}
	}
	return ErrBadBatch
}

// isSettled reports whether b's call may return.
func (b *Batch) isSettled() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.call.settled()
}

// wait sleeps until the call settles, the deadline passes, ctx ends or the
// client closes.
func (b *Batch) wait(ctx context.Context, deadline int64, ctxDeadline bool, closed <-chan struct{}) error {
	d := deadline - mono()
	if d <= 0 {
		if ctxDeadline {
			return context.DeadlineExceeded
		}
		return nil
	}
	if b.timer == nil {
		b.timer = newTimer(d)
	} else {
		b.timer.Reset(time.Duration(d))
	}
	var err error
	select {
	case <-b.wake:
	case <-b.timer.C:
		if ctxDeadline {
			err = context.DeadlineExceeded
		}
	case <-ctx.Done():
		err = ctx.Err()
	case <-closed:
		err = ErrClosed
	}
	b.timer.Stop()
	return err
}

// newTimer returns a timer firing after d ns.
func newTimer(d int64) *time.Timer { return time.NewTimer(time.Duration(d)) }

// Close closes every connection and stops the background goroutines.
// Calls in flight return ErrClosed at once; later calls return ErrClosed.
// When Close returns, no goroutine or file descriptor of the client
// remains. Close is idempotent.
func (c *Client) Close() error {
	c.closeM.Lock()
	defer c.closeM.Unlock()
	if !c.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(c.done)
	c.lifeStop()
	c.drv.closing()
	c.supWG.Wait()
	c.drv.close()
	return nil
}
