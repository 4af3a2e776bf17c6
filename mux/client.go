package mux

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// errNotConnected is the cause of a node's ErrNodeDown before any dial
// error is known.
var errNotConnected = errors.New("not connected (redial in progress)")

// errOverdue is the cause when an owed reply outlived HardTimeout.
var errOverdue = errors.New("owed reply not received within HardTimeout; connection replaced")

// node is what the client knows about one node, shared by all lanes.
type node struct {
	addr    string
	down    atomic.Bool               // last seen state (NodeUp)
	stalled atomic.Bool               // a connection was closed by HardTimeout; cleared by a successful dial
	downErr atomic.Pointer[NodeError] // the error calls get while a connection is down
	wake    chan struct{}             // wakes this node's supervisor (buffered 1)
}

// Client talks to N nodes through Lanes connections per node. Methods are
// safe for concurrent use. See the package documentation.
type Client struct {
	cfg   *resolved
	n     int
	nodes []node
	lanes []*lane
	// Free lanes: a LIFO stack guarded by freeMu, counted by tokens (one
	// token per lane on the stack). LIFO reuses the lane a goroutine just
	// returned: its connections are warm, and a command that follows an
	// earlier batch (a release after a failed acquire) travels on the same
	// connections, behind that batch's commands, instead of overtaking them
	// on another lane.
	freeMu sync.Mutex
	free   []*lane
	tokens chan struct{}

	closed atomic.Bool
	done   chan struct{} // closed by Close
	supWG  sync.WaitGroup
	closeM sync.Mutex

	plat clientPlat // platform part (Linux: the close eventfd)

	life     context.Context // cancelled by Close (aborts name look-ups)
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

// New validates cfg and dials every node (Lanes connections each, nodes in
// parallel, bounded by DialTimeout). It fails only on a bad config
// (ErrConfig): a node that cannot be reached or set up (for example a wrong
// password) is marked down, calls count it as failed at once (ErrNodeDown,
// with the dial error as cause; see NodeErr), and it is redialled in the
// background with capped, jittered backoff.
func New(cfg Config) (*Client, error) {
	r, err := resolve(cfg)
	if err != nil {
		return nil, err
	}
	c := &Client{
		cfg:    r,
		n:      len(r.Addrs),
		nodes:  make([]node, len(r.Addrs)),
		free:   make([]*lane, 0, r.Lanes),
		tokens: make(chan struct{}, r.Lanes),
		done:   make(chan struct{}),
	}
	c.life, c.lifeStop = context.WithCancel(context.Background())
	for i := range c.nodes {
		c.nodes[i].addr = r.Addrs[i]
		c.nodes[i].wake = make(chan struct{}, 1)
		c.nodes[i].down.Store(true)
		c.nodes[i].downErr.Store(&NodeError{Node: i, Addr: r.Addrs[i], Kind: ErrNodeDown, Cause: errNotConnected})
	}
	if err := c.plat.open(); err != nil {
		c.lifeStop()
		return nil, err
	}
	for k := 0; k < r.Lanes; k++ {
		l, err := newLane(c)
		if err != nil {
			for _, l := range c.lanes {
				l.shutdown()
			}
			c.plat.close()
			c.lifeStop()
			return nil, err
		}
		c.lanes = append(c.lanes, l)
	}
	// Dial: nodes in parallel, each node's lanes in turn; after a node's
	// first failure its other connections are left to the supervisor.
	var wg sync.WaitGroup
	for i := 0; i < c.n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			failed := false
			for _, l := range c.lanes {
				if !failed {
					h, err := c.dial(i)
					if err == nil {
						l.attach(i, h)
						continue
					}
					c.dialFailed(i, err)
					failed = true
				}
				l.conns[i].need.Store(true)
			}
			if !failed {
				c.nodes[i].down.Store(false)
			}
		}(i)
	}
	wg.Wait()
	for _, l := range c.lanes {
		c.pushLane(l)
	}
	c.supWG.Add(c.n)
	for i := 0; i < c.n; i++ {
		go c.supervise(i)
	}
	return c, nil
}

func (c *Client) dialFailed(i int, err error) {
	nd := &c.nodes[i]
	nd.down.Store(true)
	nd.downErr.Store(&NodeError{Node: i, Addr: nd.addr, Kind: ErrNodeDown, Cause: err})
}

// N returns the number of nodes.
func (c *Client) N() int { return c.n }

// Addrs returns the nodes' addresses, in order (a copy).
func (c *Client) Addrs() []string { return append([]string(nil), c.cfg.Addrs...) }

// NodeUp reports the node's connection state as last seen: false after a
// failed dial or a broken connection, until a redial succeeds.
func (c *Client) NodeUp(i int) bool {
	if i < 0 || i >= c.n {
		return false
	}
	return !c.nodes[i].down.Load()
}

// NodeErr returns the error calls get while node i is down (its last dial
// or connection error, errors.Is(err, ErrNodeDown)), or nil if it is up.
func (c *Client) NodeErr(i int) error {
	if i < 0 || i >= c.n || !c.nodes[i].down.Load() {
		return nil
	}
	return c.nodes[i].downErr.Load()
}

// Do writes every node's commands of b on a free lane, then reads replies
// as they arrive until p is met: every node answered, or (p.Quorum > 0) the
// quorum outcome is decided, or the deadline passed (p.Timeout, default
// Config.Timeout, measured from the call and bounded by ctx's deadline).
//
// Per-node replies and errors are in b (Reply, Last, Err). err is non-nil
// only when ctx was done before anything was sent (ctx.Err(), with a zero
// Outcome), when ctx was cancelled while waiting (ctx.Err(), with the
// Outcome so far), on ErrClosed, or on ErrBadBatch. Cancellation of a ctx
// without deadline is noticed before the call and between reply wake-ups;
// the batch deadline always bounds the wait.
func (c *Client) Do(ctx context.Context, b *Batch, p Policy) (Outcome, error) {
	if c.closed.Load() {
		return Outcome{}, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return Outcome{}, err
	}
	if b == nil || b.n != c.n || b.bad != nil {
		return Outcome{}, ErrBadBatch
	}
	empty := true
	for i := 0; i < b.n; i++ {
		if len(b.offs[i]) > 0 {
			empty = false
			break
		}
	}
	if empty || p.Quorum < 0 {
		return Outcome{}, ErrBadBatch
	}
	start := mono()
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = c.cfg.Timeout
	}
	deadline := start + int64(timeout)
	if d, ok := ctx.Deadline(); ok {
		if dl := int64(d.Sub(monoBase)); dl < deadline {
			deadline = dl
		}
	}
	select {
	case <-c.tokens:
	default:
		select {
		case <-c.tokens:
		case <-ctx.Done():
			return Outcome{}, ctx.Err()
		case <-c.done:
			return Outcome{}, ErrClosed
		}
	}
	l := c.popLane(b.lane)
	b.lane = l
	if c.closed.Load() {
		c.pushLane(l)
		return Outcome{}, ErrClosed
	}
	l.pol = p
	l.ctx = ctx
	out, err := l.do(b, start, deadline)
	l.ctx = nil
	l.pol = Policy{}
	c.pushLane(l)
	return out, err
}

// popLane takes prefer if it is free, else the most recently returned
// lane; the caller holds a token.
func (c *Client) popLane(prefer *lane) *lane {
	c.freeMu.Lock()
	k := len(c.free) - 1
	if prefer != nil && c.free[k] != prefer {
		for j := k - 1; j >= 0; j-- {
			if c.free[j] == prefer {
				k = j
				break
			}
		}
	}
	l := c.free[k]
	copy(c.free[k:], c.free[k+1:])
	c.free = c.free[:len(c.free)-1]
	c.freeMu.Unlock()
	return l
}

// pushLane returns a lane and its token.
func (c *Client) pushLane(l *lane) {
	c.freeMu.Lock()
	c.free = append(c.free, l)
	c.freeMu.Unlock()
	c.tokens <- struct{}{}
}

// Close closes every connection and epoll instance and stops the
// supervisor. Calls in flight return ErrClosed as soon as they wake (on
// Linux at once); later calls return ErrClosed. When Close returns, no
// goroutine or file descriptor of the client remains. Close is idempotent.
func (c *Client) Close() error {
	c.closeM.Lock()
	defer c.closeM.Unlock()
	if !c.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(c.done)
	c.lifeStop()
	c.plat.signal()
	c.supWG.Wait()
	for range c.lanes {
		<-c.tokens
		c.popLane(nil).shutdown()
	}
	c.plat.close()
	return nil
}

// wakeSupervisor asks node i's supervisor to look for connections to redial.
func (c *Client) wakeSupervisor(i int) {
	select {
	case c.nodes[i].wake <- struct{}{}:
	default:
	}
}
