package fakeserver

import "time"

const numDBs = 16

// entry is one string value. exp is the absolute expiry time on the node's
// clock in unix milliseconds (Redis's resolution), 0 for none. A key is
// expired once the clock is past exp, as in Redis.
type entry struct {
	val []byte
	exp int64
}

// nowLocked is the node clock in unix nanoseconds: real (monotonic) time
// plus the configured offset and drift. Callers hold n.mu.
func (n *Node) nowLocked() int64 {
	m := int64(time.Since(n.base))
	now := n.base.UnixNano() + m + n.clockOff
	if n.drift != 0 {
		now += int64(n.drift * float64(m-n.driftAt))
	}
	return now
}

// lookup returns the live entry for key, deleting it if it has expired
// (lazy expiry). Callers hold n.mu.
func (n *Node) lookup(db int, key string, now int64) (entry, bool) {
	e, ok := n.dbs[db][key]
	if !ok {
		return entry{}, false
	}
	if e.exp != 0 && e.exp < now/1e6 {
		delete(n.dbs[db], key)
		n.stats.expired.Add(1)
		return entry{}, false
	}
	return e, true
}

func (n *Node) dbsizeLocked(db int) int {
	now := n.nowLocked()
	c := 0
	for _, e := range n.dbs[db] {
		if e.exp == 0 || e.exp >= now/1e6 {
			c++
		}
	}
	return c
}

// sweepBudget bounds the work of one active expiry pass per database; Go's
// randomised map iteration makes successive passes sample different keys.
const sweepBudget = 2000

func (n *Node) sweeper() {
	t := time.NewTicker(n.cfg.SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-n.closeCh:
			return
		case <-t.C:
		}
		n.mu.Lock()
		now := n.nowLocked()
		for db := range n.dbs {
			seen := 0
			for k, e := range n.dbs[db] {
				if e.exp != 0 && e.exp < now/1e6 {
					delete(n.dbs[db], k)
					n.stats.expired.Add(1)
				}
				seen++
				if seen >= sweepBudget {
					break
				}
			}
		}
		n.mu.Unlock()
	}
}
