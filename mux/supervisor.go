package mux

import (
	"math/rand/v2"
	"time"
)

// supervise is node i's background goroutine (one per node, started by
// New, stopped by Close): it redials the connections to node i that lanes
// gave up on (need set), with capped, jittered exponential backoff, and
// hands each new connection to its lane (ready). Nothing on a caller's path
// ever dials, and a node whose dials hang until DialTimeout (a partition)
// delays only its own redials, never another node's.
func (c *Client) supervise(i int) {
	defer c.supWG.Done()
	var next int64
	var backoff time.Duration
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		wait := c.redialNode(i, &next, &backoff)
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
		case <-c.nodes[i].wake:
		case <-t.C:
		}
	}
}

// redialNode redials node i's connections if due and returns how long until
// the next attempt (0: nothing waiting).
func (c *Client) redialNode(i int, next *int64, backoff *time.Duration) time.Duration {
	needs := false
	for _, l := range c.lanes {
		if l.conns[i].need.Load() {
			needs = true
			break
		}
	}
	if !needs || c.closed.Load() {
		return 0
	}
	if now := mono(); now < *next {
		return until(*next)
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
			break // one failed dial per pass: the node is not back yet
		}
		cn.ready.Store(h)
	}
	nd := &c.nodes[i]
	if ok {
		*backoff = 0
		*next = 0
		nd.stalled.Store(false)
		nd.down.Store(false)
		return 0
	}
	b := *backoff * 2
	if b < c.cfg.ReconnectMin {
		b = c.cfg.ReconnectMin
	}
	if b > c.cfg.ReconnectMax {
		b = c.cfg.ReconnectMax
	}
	*backoff = b
	*next = mono() + int64(jitter(b))
	return until(*next)
}

// until returns the time left to the mono instant t, at least 1ms.
func until(t int64) time.Duration {
	d := time.Duration(t - mono())
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
