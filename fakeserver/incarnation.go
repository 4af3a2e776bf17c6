package fakeserver

import (
	crand "crypto/rand"
	"encoding/hex"
	"strconv"
	"time"
)

// DefaultStartUptime is the uptime a node reports when it starts
// (Config.StartUptime): a new fake node has never granted anything, so it
// is as safe to trust as one that has been up for long, and clients that
// quarantine recently started nodes (redlock, docs/OPERATIONS.md) can use
// it at once. Restart and Failover start the uptime from zero, as Redis.
const DefaultStartUptime = time.Hour

// incarnation is one life of a node's data set, what INFO server and INFO
// replication report: a process (runID, started at start) serving a
// replication history (replID; replID2 and secondOff after a promotion).
type incarnation struct {
	runID, replID, replID2 string
	secondOff              int64 // second_repl_offset: -1, or where the promotion happened
	start                  time.Time
}

// noReplID is master_replid2 when there is no previous history.
const noReplID = "0000000000000000000000000000000000000000"

func randomID() string {
	var b [20]byte
	_, _ = crand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// newLife starts a new incarnation: a new process with a new run_id,
// started now (minus ago). keepRepl keeps the replication history (a
// restart that loaded its data); promoted makes it a promoted replica's
// (a new history that continues the old one).
func (n *Node) newLife(ago time.Duration, keepRepl, promoted bool) {
	old := n.life.Load()
	inc := &incarnation{runID: randomID(), replID: randomID(), replID2: noReplID, secondOff: -1, start: time.Now().Add(-ago)}
	switch {
	case old != nil && promoted:
		inc.replID2, inc.secondOff = old.replID, 1
	case old != nil && keepRepl:
		inc.replID, inc.replID2, inc.secondOff = old.replID, old.replID2, old.secondOff
	}
	n.life.Store(inc)
}

// RunID returns the node's current run_id (new at every Restart and
// Failover).
func (n *Node) RunID() string { return n.life.Load().runID }

// ReplID returns the node's current master_replid (new at every Failover,
// Resync and ResyncLag, and at a Restart that lost its data).
func (n *Node) ReplID() string { return n.life.Load().replID }

// infoServerLife writes INFO server's incarnation lines. The uptime is
// Redis's: the difference of two whole-second wall clock stamps (its
// cached unixtime minus stat_starttime), so it overstates the process's
// age by up to 1 s (a node started at wall .98 says 1 when 40 ms old),
// which a client's estimate of the start must allow for
// (docs/OPERATIONS.md, rule 2).
func (n *Node) infoServerLife(line func(k, v string)) {
	inc := n.life.Load()
	line("run_id", inc.runID)
	up := uptimeSeconds(time.Now(), inc.start)
	line("uptime_in_seconds", strconv.FormatInt(up, 10))
	line("uptime_in_days", strconv.FormatInt(up/86400, 10))
}

// uptimeSeconds is Redis's uptime_in_seconds at now for a process started
// at start: whole seconds of the wall clock, each stamp rounded down.
func uptimeSeconds(now, start time.Time) int64 { return max(now.Unix()-start.Unix(), 0) }

// infoReplication writes INFO replication: a primary without replicas.
func (n *Node) infoReplication(line func(k, v string)) {
	inc := n.life.Load()
	line("role", "master")
	line("connected_slaves", "0")
	line("master_failover_state", "no-failover")
	line("master_replid", inc.replID)
	line("master_replid2", inc.replID2)
	line("master_repl_offset", "0")
	line("second_repl_offset", strconv.FormatInt(inc.secondOff, 10))
	line("repl_backlog_active", "0")
}

// Failover models a failover to a replica that lagged lag behind: every
// connection is dropped, every key written (set, changed or extended) in
// the last lag is lost (a key changed within it is gone, not put back to
// its older value: a harsher loss than a real replica's), the script
// cache is emptied (EVALSHA answers NOSCRIPT), and the node
// comes back after delay as a promoted replica: a new run_id and
// master_replid, the old one as master_replid2, second_repl_offset set,
// uptime from zero. It returns when the node is back.
func (n *Node) Failover(lag, delay time.Duration) error {
	if n.closed.Load() {
		return ErrClosed
	}
	gen := n.down()
	n.loseRecent(lag, false)
	n.flushScripts() // a promoted replica's script cache is its own
	n.newLife(0, false, true)
	return n.comeBack(gen, delay)
}
