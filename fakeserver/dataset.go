package fakeserver

import (
	"context"
	"math/rand/v2"
	"slices"
	"time"
)

// This file holds the faults that change a node's data set without
// (Flush, Resync) or with (RestartLag) a restart, and a node that refuses
// INFO: what a lock client must see by the data itself
// (docs/OPERATIONS.md, rule 4), since INFO read at connection set-up does
// not tell it.

// Flush empties every database and keeps every connection, as FLUSHALL:
// no client is disconnected, the process and its INFO are unchanged.
func (n *Node) Flush() {
	n.mu.Lock()
	n.touchFlushed(-1)
	n.dataGen.Add(1)
	for i := range n.dbs {
		n.dbs[i] = make(map[string]entry)
	}
	n.mu.Unlock()
}

// Resync replaces the node's data set with a copy of from's (nil: an empty
// one) and keeps every connection: what REPLICAOF from, its full
// synchronisation, then REPLICAOF NO ONE do to a Redis primary. The
// process stays (same run_id); its replication history is new, continuing
// from's (master_replid2, second_repl_offset set), as after a promotion.
// Expiry times are copied as they are (absolute, as Redis replicates
// them) and read on this node's clock.
func (n *Node) Resync(from *Node) {
	var dbs [numDBs]map[string]entry
	fromRepl := noReplID
	if from != nil && from != n {
		from.mu.Lock()
		for i := range from.dbs {
			dbs[i] = make(map[string]entry, len(from.dbs[i]))
			for k, e := range from.dbs[i] {
				dbs[i][k] = e.clone()
			}
		}
		from.mu.Unlock()
		fromRepl = from.life.Load().replID
	}
	n.mu.Lock()
	n.touchFlushed(-1)
	n.dataGen.Add(1)
	at := int64(time.Since(n.base))
	for i := range n.dbs {
		if dbs[i] == nil {
			dbs[i] = make(map[string]entry)
		}
		for k, e := range dbs[i] {
			e.at = at // written now, on this node
			dbs[i][k] = e
		}
		n.dbs[i] = dbs[i]
	}
	n.mu.Unlock()
	old := n.life.Load()
	n.life.Store(&incarnation{runID: old.runID, replID: randomID(), replID2: fromRepl, secondOff: 1, start: old.start})
}

// RestartLag restarts the node from an older snapshot of its own data: as
// Restart keeping data (a new run_id, connections dropped, the script
// cache emptied), but every key written (set, changed or extended) in the
// last lag is lost, as after a crash of a server whose last RDB or AOF
// fsync is lag old. Keys older than that, a data-set marker among them,
// survive. It returns when the node is back (at once).
func (n *Node) RestartLag(lag time.Duration) error {
	if n.closed.Load() {
		return ErrClosed
	}
	gen := n.down()
	n.loseRecent(lag, false)
	n.flushScripts()
	n.newLife(0, true, false)
	return n.comeBack(gen, 0)
}

// ResyncLag models a full resync from a former replica of the node's own,
// detached lag ago (REPLICAOF it, then REPLICAOF NO ONE, as a failover and
// back): every key written (set, changed or extended) in the last lag is
// lost (a key changed within it is gone, as Failover's loss), older keys,
// its data-set marker among them, are kept. The process stays (same
// run_id), its replication history is new, its connections are kept, and
// a tracking connection is told of the flush ahead of its next reply
// (flushPush), as Redis tells of the full resync's.
func (n *Node) ResyncLag(lag time.Duration) {
	n.loseRecent(lag, true)
	old := n.life.Load()
	n.life.Store(&incarnation{runID: old.runID, replID: randomID(), replID2: randomID(), secondOff: 1, start: old.start})
}

// loseRecent deletes every key written in the last lag (Failover,
// RestartLag; ResyncLag, a flush, bumps its witnesses).
func (n *Node) loseRecent(lag time.Duration, flush bool) {
	n.mu.Lock()
	if flush {
		n.touchFlushed(-1)
		n.dataGen.Add(1)
	}
	cut := int64(time.Since(n.base) - lag)
	for db := range n.dbs {
		for k, e := range n.dbs[db] {
			if e.at > cut {
				delete(n.dbs[db], k)
			}
		}
	}
	n.touchDB(-1)
	n.mu.Unlock()
}

// DataGen counts the times the node's data set was lost or replaced whole
// without a new process (a checker's witness: Flush, Resync, FLUSHALL,
// FLUSHDB, and a Restart that lost its data). A restart's new run_id
// (RunID) tells the rest.
func (n *Node) DataGen() uint64 { return n.dataGen.Load() }

// RefuseInfo makes INFO an error reply (NOPERM, as Redis answers a user
// whose ACL forbids it) while on is set: a node that does not tell its
// incarnation (a managed service, a renamed command).
func (n *Node) RefuseInfo(on bool) { n.infoRefused.Store(on) }

// RefuseTracking makes CLIENT TRACKING an error reply (NOPERM) while on is
// set, from the next set-up on: a node that does not tell its clients of
// its flushes (an ACL without it, a proxy). A connection that turned
// tracking on before keeps it.
func (n *Node) RefuseTracking(on bool) { n.trackingRefused.Store(on) }

// infoRefusedErr is Redis 7.0's reply to INFO for a user without the
// permission.
const infoRefusedErr = "NOPERM this user has no permissions to run the 'info' command"

// clone is a deep copy of e (Resync's copy of another node's data set).
func (e entry) clone() entry {
	e.val = append([]byte(nil), e.val...)
	if e.hash != nil {
		h := newHash()
		for i, name := range e.hash.names {
			h.set(name, e.hash.vals[i]) // copies the value
		}
		e.hash = h
	}
	if e.list != nil {
		l := &listVal{}
		for _, v := range e.list.front {
			l.front = append(l.front, append([]byte(nil), v...))
		}
		for _, v := range e.list.back {
			l.back = append(l.back, append([]byte(nil), v...))
		}
		e.list = l
	}
	if e.zset != nil {
		e.zset = e.zset.clone()
	}
	return e
}

// dataSetActions are the data-set faults the profile enables (Chaos.actions).
func (ch *Chaos) dataSetActions(ctx context.Context) []chaosAction {
	p, cnt := ch.p, &ch.Counts
	var actions []chaosAction
	if p.RestartLag {
		actions = append(actions, chaosAction{true, func(n *Node, _ time.Duration, rng *rand.Rand) {
			cnt.RestartLag.Add(1)
			lag := span(rng, 0, p.FailoverLag)
			ch.note(n, "restart from a snapshot %v old", lag)
			_ = n.RestartLag(lag)
		}})
	}
	if p.Wipes {
		// no connection breaks and the node answers throughout, but what
		// it held is gone: it impairs the node as a restart does
		actions = append(actions, chaosAction{true, func(n *Node, _ time.Duration, _ *rand.Rand) {
			cnt.Wipes.Add(1)
			ch.note(n, "wipe (FLUSHALL)")
			n.Flush()
		}})
	}
	if p.Resyncs {
		actions = append(actions, chaosAction{true, func(n *Node, _ time.Duration, rng *rand.Rand) {
			cnt.Resyncs.Add(1)
			switch rng.IntN(3) {
			case 0:
				// a former replica of its own, detached up to the largest
				// TTL ago: its marker, less every write since (what only
				// the flush told on the connection shows)
				cnt.ResyncsOwn.Add(1)
				lag := span(rng, 0, p.MaxTTL)
				ch.note(n, "resync from an older copy of its own, %v behind", lag)
				n.ResyncLag(lag)
			case 1:
				ch.note(n, "resync from an empty server")
				n.Resync(nil) // an empty server's
			default:
				from := ch.cl.Nodes[rng.IntN(len(ch.cl.Nodes))]
				if from == n {
					from = nil
				}
				ch.note(n, "resync from node %d (nil: an empty one) %v", slices.Index(ch.cl.Nodes, from), from == nil)
				n.Resync(from) // a sibling's data set, marker and all
			}
		}})
	}
	if p.InfoRefused {
		actions = append(actions, chaosAction{true, func(n *Node, d time.Duration, _ *rand.Rand) {
			cnt.InfoRefused.Add(1)
			ch.note(n, "INFO refused for %v", d)
			n.RefuseInfo(true)
			sleepCtx(ctx, d/2)
			ch.note(n, "restart losing data while INFO is refused, back at once")
			_ = n.Restart(true, 0)
			sleepCtx(ctx, d/2)
			ch.note(n, "INFO answered again")
			n.RefuseInfo(false)
		}})
	}
	return actions
}
