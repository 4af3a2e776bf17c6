package mux

import "time"

// clusterTopo is a Redis Cluster node's topology (topology.go): a group
// per shard primary of the slot map, each dialled and redialled on its own
// (cluster_dial.go), a batch routed by its key's slot, MOVED and ASK
// followed within the call and the map asked for again.
type clusterTopo struct{ plainTopo }

// newClusterTopo makes node i a cluster node: its slot map state.
func (c *Client) newClusterTopo(i int) topology {
	c.nodes[i].cluster = &clusterState{}
	return clusterTopo{}
}

func (clusterTopo) groups() int  { return MaxClusterShards }
func (clusterTopo) routes() bool { return true }

func (clusterTopo) connect(c *Client, i int) bool {
	if err := c.refreshSlots(i); err != nil {
		c.markDown(i, err)
		return false
	}
	// each shard on its own: a dead one fails only its keys
	return c.dialShardsNow(i)
}

func (clusterTopo) redial(c *Client, i int, next *int64, backoff *time.Duration) time.Duration {
	cs := c.nodes[i].cluster
	if c.closed.Load() {
		return c.redialConns(i, next, backoff)
	}
	if err := c.refreshSlots(i); err != nil && cs.m.Load() == nil {
		c.nodes[i].down.Store(true)
		c.nodes[i].downErr.Store(&NodeError{Node: i, Addr: c.nodes[i].addr, Kind: ErrNodeDown, Cause: c.cleanCause(i, err)})
	}
	wait := c.redialShards(i)
	if cs.refresh.Load() {
		// asked again once the fetch backoff (or minRefresh) has passed
		again := max(minRefresh, cs.wait)
		if wait == 0 || again < wait {
			wait = again
		}
	}
	return wait
}

// dial reaches the primary the slot map names for shard g.
func (clusterTopo) dial(c *Client, i, g int, try dialFunc) error {
	host, port, err := c.shardAddr(i, g)
	if err != nil {
		return err
	}
	_, err = try(host, port, time.Now().Add(c.cfg.DialTimeout))
	return err
}

func (clusterTopo) learn(c *Client, i, g int, inc *Incarnation) { c.learnShard(i, g, inc) }

func (clusterTopo) conn(c *Client, i int, b *Batch) (*pconn, error) { return c.clusterConn(i, b) }

// errReply: READONLY or LOADING as for a plain node; a MOVED, ASK,
// TRYAGAIN or CLUSTERDOWN is delivered as the error it is (the command
// did nothing) and the supervisor asks for the slot map again.
func (clusterTopo) errReply(c *Client, i int, f []byte) error {
	if d := demotedReply(f, false); d != nil {
		return d
	}
	if clusterRedirect(f) {
		c.askSlots(i)
	}
	return nil
}

func (clusterTopo) redirect(cn *pconn, b *Batch, k int, gen uint64, f []byte) bool {
	return cn.redirect(b, k, gen, f)
}
