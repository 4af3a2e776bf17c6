package mux

import (
	"errors"
	"time"

	"github.com/redmux/redmux/resp"
)

// This file holds the flush watch (Config.WatchFlushes). A client that
// turned on CLIENT TRACKING is sent an invalidation of every key, a push
// frame ">2 invalidate <null>", when the server's data set is flushed or
// replaced: FLUSHALL, FLUSHDB, and the start of a full resync, when a
// primary made a replica (REPLICAOF) empties its data set for the other
// server's. Redis writes it on each tracking connection as it happens,
// ahead of every reply that follows (measured on redis-server 7.0.15:
// FLUSHALL, and a full resync under each repl-diskless-load setting, the
// connections kept). OPTIN with nothing opted in tracks no key, so no
// other invalidation comes and the server keeps no table for it.
//
// So a reply read after such a push was made by the new data set, and
// one read before it by the old: the order the client needs to tell a
// data set that lost keys without a restart (docs/OPERATIONS.md) from one
// that did not, on a connection that was never broken. The reader notes
// the flush, delivers the replies before it, and sets the connection up
// again (the replies after it fail with it): a full resync followed by a
// promotion gives the node a new replication history, which the set-up's
// INFO learns (Config.Incarnations), where the kept connection would not.

// Flush is the latest flush or replacement of a node's data set that a
// Client read (Config.WatchFlushes): a FLUSHALL, a FLUSHDB (of any
// database), or a full resync from another server.
type Flush struct {
	// N counts the flushes read since New, on any of the node's
	// connections (each connection reads each flush once: N may count
	// one flush more than once).
	N uint64
	// At is when the latest was read: the data set changed before it.
	At time.Time
}

// LastFlush returns the latest flush of node i's data set this Client has
// read, or nil before any (or when Config.WatchFlushes is off). A flush
// is noted when its push frame is parsed, before any reply read after it
// on that connection is delivered: a reply delivered after LastFlush
// returned p was read after p's flush, or there was none since. For a
// Redis Cluster node, a flush of any of its shards is the node's.
func (c *Client) LastFlush(i int) *Flush {
	if i < 0 || i >= c.n {
		return nil
	}
	return c.nodes[i].flush.Load()
}

// noteFlush records a flush of node i's data set, read now.
func (c *Client) noteFlush(i int) {
	p := &c.nodes[i].flush
	for {
		old := p.Load()
		nw := &Flush{N: 1, At: time.Now()}
		if old != nil {
			nw.N = old.N + 1
		}
		//mutant:flush-push-ignored
		if p.CompareAndSwap(old, nw) {
			return
		}
	}
}

var invalidateName = []byte("invalidate")

// errFlushed is why a connection that read a flush is set up again: a
// full resync then a promotion keeps the connection but gives the node a
// new replication history, which only a set-up's INFO learns.
var errFlushed = errors.New("the node's data set was flushed or replaced (told by CLIENT TRACKING): connection set up again, the node judged again")

// isFlushPush reports whether rep is CLIENT TRACKING's invalidation of
// every key (">2 invalidate <null>"); an invalidation of named keys (an
// array in place of the null) is not.
func isFlushPush(rep resp.Reply) bool {
	if rep.Type != resp.TypePush || rep.Len() != 2 {
		return false
	}
	it := rep.Iter()
	var a resp.Reply
	if !it.Next(&a) || a.Type != resp.TypeBulkString || string(a.Data) != string(invalidateName) || !it.Next(&a) {
		return false
	}
	return a.Null
}
