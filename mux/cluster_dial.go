package mux

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// This file holds how a Redis Cluster node's shard connections are
// dialled: each shard on its own (New dials them in parallel; the
// supervisor redials each with its own backoff, in a goroutine of its
// own), so a shard whose primary refuses, or accepts and never answers,
// fails only the commands routed to it (issue 46), as a node's failure is
// that node's.

// shardDial is one shard's redial state. While dialing is set, the
// shard's dialer owns next and backoff; else the supervisor does.
type shardDial struct {
	dialing atomic.Bool
	next    int64 // mono time of the next attempt
	backoff time.Duration
}

// dialShardsNow dials every shard of cluster node i's map in parallel,
// each shard's connections one after the other until one fails, and
// returns when all are done (New). It reports whether every connection is
// up.
func (c *Client) dialShardsNow(i int) bool {
	m := c.nodes[i].cluster.m.Load()
	if m == nil {
		return false
	}
	var wg sync.WaitGroup
	var failed atomic.Bool
	for k, a := range m.addrs {
		if a == "" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !c.dialShard(i, k, a, c.shardConns(i, k)) {
				failed.Store(true)
			}
		}()
	}
	wg.Wait()
	return !failed.Load()
}

// dialShard dials cns, connections of cluster node i's shard k whose
// primary the map named addr, one after the other until one fails, and
// reports whether all are up. A connection made to addr after the map
// moved shard k elsewhere is dropped (refreshSlots replaces the shard's
// connections only when it changes the map: one dialled from the old map
// while it did would stay on the old primary).
func (c *Client) dialShard(i, k int, addr string, cns []*pconn) bool {
	for _, cn := range cns {
		if c.closed.Load() || !c.connect(cn) {
			return false
		}
		if m := c.nodes[i].cluster.m.Load(); m == nil || m.addrs[k] != addr {
			cn.abort(ErrConnBroken, errResharded)
			return false
		}
	}
	return true
}

// redialShards starts a redial of each shard of cluster node i's map that
// has a connection down, is due, and has none under way, each in a
// goroutine of its own (which wakes the supervisor when it ends), and
// returns how long until the next shard is due (0: none waiting). The node
// is up once every shard's connections are. Supervisor only.
func (c *Client) redialShards(i int) time.Duration {
	cs := c.nodes[i].cluster
	m := cs.m.Load()
	if m == nil || c.closed.Load() {
		return 0
	}
	var wait time.Duration
	up := true
	for k, a := range m.addrs {
		if a == "" {
			continue
		}
		sd := &cs.dial[k]
		if sd.dialing.Load() {
			up = false
			continue
		}
		var down []*pconn
		for _, cn := range c.shardConns(i, k) {
			if cn.current() == nil {
				down = append(down, cn)
			}
		}
		if len(down) == 0 {
			sd.next, sd.backoff = 0, 0
			continue
		}
		up = false
		if mono() < sd.next {
			if w := until(sd.next); wait == 0 || w < wait {
				wait = w
			}
			continue
		}
		sd.dialing.Store(true)
		c.supWG.Add(1) // the supervisor's own count is held: Close waits for this one too
		go c.redialShard(i, k, a, down)
	}
	if up {
		c.nodes[i].down.Store(false)
	}
	return wait
}

// redialShard is one shard's redial (redialShards): on failure the shard's
// backoff grows (capped, jittered); either way the supervisor is woken.
func (c *Client) redialShard(i, k int, addr string, down []*pconn) {
	defer c.supWG.Done()
	sd := &c.nodes[i].cluster.dial[k]
	if c.dialShard(i, k, addr, down) {
		sd.next, sd.backoff = 0, 0
	} else {
		sd.backoff = min(max(2*sd.backoff, c.cfg.ReconnectMin), c.cfg.ReconnectMax)
		sd.next = mono() + int64(jitter(sd.backoff))
	}
	sd.dialing.Store(false)
	select {
	case c.nodes[i].wake <- struct{}{}:
	default:
	}
}

// shardCause names the shard in the cause of a cluster node's failed
// dial: the node's error then says which primary is down.
func (c *Client) shardCause(cn *pconn, err error) error {
	if c.nodes[cn.node].cluster == nil {
		return err
	}
	m := c.nodes[cn.node].cluster.m.Load()
	if m == nil || m.addrs[cn.shard] == "" {
		return err
	}
	return fmt.Errorf("shard %s: %w", m.addrs[cn.shard], err)
}
