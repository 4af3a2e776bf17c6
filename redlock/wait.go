package redlock

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redmux/redmux/mux"
	"github.com/redmux/redmux/resp"
)

// This file is the grant that survives a failover (docs/OPERATIONS.md,
// "Grants that survive a failover", issue 45): on a node with replicas a
// grant or an extension counts only once the node's replicas acknowledged
// it, WAIT numreplicas timeout pipelined right after the lock command on
// the same connection. A promoted replica then holds every key that
// counted, and a process the sentinels replaced (whose replicas left it)
// grants nothing.

// WithReplicaAcks sets how many replicas must acknowledge a grant or an
// extension on a node before it counts there (WAIT n, pipelined with the
// lock command, bounded by the node timeout). Default: on a Sentinel node
// (redis-sentinel://), the replicas its sentinels saw healthy when the
// connection was set up (mux.Client.Replicas); on any other node none.
// WithReplicaAcks(0) turns it off on every node (a failover may then
// lose a grant's key: docs/OPERATIONS.md); n > 0 asks n of every node that
// is not a Sentinel node (a primary with replicas of its own), whose
// grants then fail while fewer than n replicas are connected. n < 0 is
// refused (ErrBadOption).
func WithReplicaAcks(n int) Option {
	return clientOption(func(c *clientConfig) { c.waitSet, c.waitPlain = true, n })
}

// errNotReplicated is a node's grant that its replicas did not
// acknowledge in time: it does not count.
var errNotReplicated = errors.New("the grant was not acknowledged by the node's replicas within the node timeout (WAIT): it does not count")

func checkWait(cfg *clientConfig) error {
	if cfg.waitSet && cfg.waitPlain < 0 {
		return fmt.Errorf("%w: replica acknowledgements %d", ErrBadOption, cfg.waitPlain)
	}
	return nil
}

// waitFor is how many replica acknowledgements a command on node i needs
// now (0: no WAIT).
func (c *Client) waitFor(i int) int {
	if c.waitOff {
		return 0
	}
	if r := c.m.Replicas(i); r >= 0 {
		return r // a Sentinel node: what its sentinels see
	}
	return c.waitPlain
}

// prepWait adds, for every node that needs it, WAIT n ms to b right
// after its lock command (the one command each node has so far), and
// notes n in w.waitN. The command is encoded into w.wcmd (no allocation
// once it has grown).
func (c *Client) prepWait(w *worker, b *mux.Batch, timeout time.Duration) {
	// WAIT answers by 3/4 of the call's timeout (Redis checks blocked
	// clients' timeouts at its hz, 10 a second by default, so a WAIT not
	// met may answer up to 100 ms later: then after the call, the node
	// pending); WAIT 0 would block for ever
	ms := max(ttlMillis(timeout*3/4), 1)
	for i := 0; i < c.n; i++ {
		w.lockN[i] = b.Commands(i)
		n := c.waitFor(i)
		w.waitN[i] = n
		if n <= 0 {
			continue
		}
		w.wcmd = resp.AppendArrayHeader(w.wcmd[:0], 3)
		w.wcmd = resp.AppendBulkString(w.wcmd, "WAIT")
		w.wcmd = appendBulkInt(w.wcmd, int64(n))
		w.wcmd = appendBulkInt(w.wcmd, ms)
		b.AddShared(i, w.wcmd, mux.ExpectInt) // one WAIT covers every write before it
	}
}

// appendBulkInt appends v as a bulk string.
func appendBulkInt(dst []byte, v int64) []byte {
	var num [20]byte
	s := strconv.AppendInt(num[:0], v, 10)
	dst = append(dst, '$')
	dst = strconv.AppendInt(dst, int64(len(s)), 10)
	dst = append(dst, '\r', '\n')
	dst = append(dst, s...)
	return append(dst, '\r', '\n')
}

// acked reports whether node i's replies rs carry the WAIT its command
// needed (w.waitN[i]) with enough acknowledgements: the WAIT is the
// second reply, when there is one.
func (w *worker) acked(i int, rs mux.Replies) bool {
	//mutant:wait-ignored
	n := w.waitN[i]
	if n <= 0 {
		return true
	}
	v, ok := rs.At(w.lockN[i]).Int()
	return ok && v >= int64(n)
}
