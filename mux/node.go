package mux

import "sync/atomic"

// This file holds what the client knows of each node: its state, its
// errors, its connections and their dialling.

// node is what the client knows about one node.
type node struct {
	addr    string
	down    atomic.Bool                 // last seen state (NodeUp)
	downErr atomic.Pointer[NodeError]   // the error calls get while a connection is down
	wake    chan struct{}               // wakes this node's supervisor (buffered 1)
	inc     atomic.Pointer[Incarnation] // learned by the newest set-up (Config.Incarnations)
	flush   atomic.Pointer[Flush]       // the latest flush of its data set read (Config.WatchFlushes)
	primary atomic.Pointer[string]      // a Sentinel node's primary, host:port, of the newest set-up
	// a Sentinel node's: the replicas its sentinels saw at the newest
	// set-up (Replicas), and the switches announced (a set-up under way
	// when one comes is not kept)
	replicas  atomic.Int32
	switchGen atomic.Uint64
	// a Sentinel node's: a +switch-master is being checked with the
	// sentinels (claimSwitch)
	switchCheck atomic.Bool
	cluster     *clusterState // a Redis Cluster node's slot map (nil: any other node)
	// topo is what the node's kind changes in the engine (topology.go);
	// routes caches topo.routes() for Do's path
	topo   topology
	routes bool
}

// nodeKinds are a node's errors that carry no cause, made once at New and
// never changed, so every per-node error is a *NodeError without an
// allocation per call.
type nodeKinds struct {
	pending, timeout, notSent, closed *NodeError
	secrets                           []string // the node's (cleanText: a *ServerError's text)
}

// kind returns node i's *NodeError of kind, or kind itself when ks is
// nil (a batch made without a client, in tests).
func kindErr(ks []nodeKinds, i int, kind error) error {
	if ks == nil {
		return kind
	}
	switch kind {
	case ErrPending:
		return ks[i].pending
	case ErrTimeout:
		return ks[i].timeout
	case ErrNotSent:
		return ks[i].notSent
	case ErrClosed:
		return ks[i].closed
	}
	return kind
}

// nodeConns returns node i's connections (a cluster node's of every
// shard index, dialled or not).
func (c *Client) nodeConns(i int) []*pconn {
	return c.conns[c.base[i]:c.base[i+1]]
}

// connect dials cn's node and installs the connection; false on failure
// (the node is marked down with the dial error).
func (c *Client) connect(cn *pconn) bool {
	l, err := c.drv.dial(cn.node, cn.shard)
	if err == nil {
		err = cn.install(l)
	}
	if err != nil {
		if !c.closed.Load() {
			c.markDown(cn.node, c.shardCause(cn, err))
		}
		return false
	}
	return true
}

// nodeErr builds node i's error of the given kind.
func (c *Client) nodeErr(i int, kind, cause error) *NodeError {
	return &NodeError{Node: i, Addr: c.nodes[i].addr, Kind: kind, Cause: cause}
}

// markDown records that node i lost a connection (or could not dial one)
// and asks its supervisor to redial.
func (c *Client) markDown(i int, cause error) {
	nd := &c.nodes[i]
	nd.down.Store(true)
	nd.downErr.Store(&NodeError{Node: i, Addr: nd.addr, Kind: ErrNodeDown, Cause: c.cleanCause(i, cause)})
	if nd.cluster != nil {
		nd.cluster.refresh.Store(true) // the shard may have failed over
	}
	select {
	case nd.wake <- struct{}{}:
	default:
	}
}

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
