package mux

import (
	"math/rand/v2"
	"time"
)

// supervise is the client's one background goroutine: it redials the
// connections lanes gave up on (need set), node by node, with capped,
// jittered exponential backoff per node, and hands each new connection to
// its lane (ready). Nothing on a caller's path ever dials.
func (c *Client) supervise() {
	defer c.supWG.Done()
	next := make([]int64, c.n)
	backoff := make([]time.Duration, c.n)
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		wait := c.redialPass(next, backoff)
		if c.closed.Load() {
			return
		}
		if wait <= 0 {
			wait = time.Hour
		}
		t.Reset(wait)
		select {
		case <-c.done:
			return
		case <-c.wake:
		case <-t.C:
		}
	}
}

// redialPass redials what is due and returns how long until the next
// attempt (0: nothing waiting).
func (c *Client) redialPass(next []int64, backoff []time.Duration) time.Duration {
	var earliest int64
	for i := 0; i < c.n; i++ {
		if c.closed.Load() {
			return 0
		}
		needs := false
		for _, l := range c.lanes {
			if l.conns[i].need.Load() {
				needs = true
				break
			}
		}
		if !needs {
			continue
		}
		if now := mono(); now < next[i] {
			if earliest == 0 || next[i] < earliest {
				earliest = next[i]
			}
			continue
		}
		ok := true
		for _, l := range c.lanes {
			cn := &l.conns[i]
			if c.closed.Load() {
				return 0
			}
			if !cn.need.CompareAndSwap(true, false) {
				continue
			}
			h, err := c.dial(i)
			if err != nil {
				cn.need.Store(true)
				if !c.closed.Load() {
					c.dialFailed(i, err)
				}
				ok = false
				break
			}
			cn.ready.Store(h)
		}
		nd := &c.nodes[i]
		if ok {
			backoff[i] = 0
			next[i] = 0
			nd.stalled.Store(false)
			nd.down.Store(false)
			continue
		}
		b := backoff[i] * 2
		if b < c.cfg.ReconnectMin {
			b = c.cfg.ReconnectMin
		}
		if b > c.cfg.ReconnectMax {
			b = c.cfg.ReconnectMax
		}
		backoff[i] = b
		next[i] = mono() + int64(jitter(b))
		if earliest == 0 || next[i] < earliest {
			earliest = next[i]
		}
	}
	if earliest == 0 {
		return 0
	}
	d := time.Duration(earliest - mono())
	if d < time.Millisecond {
		d = time.Millisecond
	}
	return d
}

// jitter returns a random duration in [d/2, d].
func jitter(d time.Duration) time.Duration {
	h := d / 2
	if h <= 0 {
		return d
	}
	return h + time.Duration(rand.Int64N(int64(h)+1))
}
