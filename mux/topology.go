package mux

import "time"

// topology is what a node's kind (plain, Redis Cluster, Sentinel-managed)
// changes in the engine, asked through one value on the node (node.topo):
// where to dial, what an incarnation belongs to, which connection a batch
// takes, and what an error reply means. The engine files name no kind; a
// plain node answers "nothing special" (plainTopo, here); a cluster node's
// answers are in cluster_topo.go, a Sentinel node's in sentinel_topo.go.
// As rueidis keeps topology one floor above its pipe: the connections
// below do not know what routes to them.
type topology interface {
	// groups is how many connection groups the node has (a cluster's
	// shard primaries; else 1), each of Config.Conns connections.
	groups() int
	// routes reports whether a batch's key picks the connection group
	// (conn); the engine caches it on the node (node.routes).
	routes() bool
	// connect dials the node's connections at New and reports whether
	// the node is up.
	connect(c *Client, i int) bool
	// background starts the node's own goroutines after New's dials
	// (counted in c.supWG).
	background(c *Client, i int)
	// redial is the supervisor's pass over node i: it redials what is due
	// and returns how long until the next attempt (0: nothing waiting).
	redial(c *Client, i int, next *int64, backoff *time.Duration) time.Duration
	// dial reaches connection group g of node i through try, which dials
	// host:port by a deadline and returns how to undo that dial (close it)
	// if the topology then refuses the process it reached.
	dial(c *Client, i, g int, try dialFunc) error
	// learn keeps the incarnation a set-up of group g reported.
	learn(c *Client, i, g int, inc *Incarnation)
	// conn is the connection batch b takes on node i (when routes).
	conn(c *Client, i int, b *Batch) (*pconn, error)
	// errReply is what error reply f from node i means, on the reader:
	// an error to deliver f and then replace the connection with (the
	// process is no longer the writable primary it was), else nil.
	errReply(c *Client, i int, f []byte) error
	// redirect follows f, a reply to command k of b's call gen, to where
	// it says the command belongs (b.mu held); false: f is delivered.
	redirect(cn *pconn, b *Batch, k int, gen uint64, f []byte) bool
}

// dialFunc dials host:port by deadline (dialTopo's try).
type dialFunc func(host string, port int, deadline time.Time) (undo func(), err error)

// setTopology gives node i the topology of its address ns (New).
func (c *Client) setTopology(i int, ns *nodeSpec) {
	switch {
	case ns.cluster != nil:
		c.nodes[i].topo = c.newClusterTopo(i)
	case ns.sentinel != nil:
		c.nodes[i].topo = sentinelTopo{}
	default:
		c.nodes[i].topo = plainTopo{}
	}
	c.nodes[i].routes = c.nodes[i].topo.routes()
	c.slotted = c.slotted || c.nodes[i].routes
}

// checksRole reports whether the set-up asks the process its ROLE: a
// Sentinel node's or a cluster node's (the sentinels' answer or the slot
// map may be stale: the process says what it is).
func (ns *nodeSpec) checksRole() bool { return ns.sentinel != nil || ns.cluster != nil }

// plainTopo is a plain node's topology: one group, dialled at its address.
type plainTopo struct{}

func (plainTopo) groups() int             { return 1 }
func (plainTopo) routes() bool            { return false }
func (plainTopo) background(*Client, int) {}

func (plainTopo) connect(c *Client, i int) bool {
	for _, cn := range c.liveConns(i) {
		if !c.connect(cn) {
			return false // the rest are the supervisor's
		}
	}
	return true
}

func (plainTopo) redial(c *Client, i int, next *int64, backoff *time.Duration) time.Duration {
	return c.redialConns(i, next, backoff)
}

func (plainTopo) dial(c *Client, i, _ int, try dialFunc) error {
	ns := &c.cfg.nodes[i]
	_, err := try(ns.host, ns.port, time.Now().Add(c.cfg.DialTimeout))
	return err
}

func (plainTopo) learn(c *Client, i, _ int, inc *Incarnation) { c.nodes[i].inc.Store(inc) }

func (plainTopo) conn(*Client, int, *Batch) (*pconn, error) { return nil, nil }

// errReply: a plain node answering READONLY or LOADING is no longer a
// writable primary (made a replica behind the client's back, or
// restarting): the connection is replaced and the set-up judges the
// process again.
func (plainTopo) errReply(_ *Client, _ int, f []byte) error {
	//mutant:readonly-plain-kept
	return demotedReply(f, false)
}

func (plainTopo) redirect(*pconn, *Batch, int, uint64, []byte) bool { return false }
