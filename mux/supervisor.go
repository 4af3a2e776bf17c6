package mux

import (
	"math/rand/v2"
	"time"
)

// supervise is node i's background goroutine (one per node, started by
// New, stopped by Close): it redials node i's connections that broke or
// could not be made, with capped, jittered exponential backoff. Nothing on
// a caller's path ever dials, and a node whose dials hang until
// DialTimeout (a partition) delays only its own redials, never another
// node's.
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

// redialNode redials node i's connections if due, as its topology says,
// and returns how long until the next attempt (0: nothing waiting).
func (c *Client) redialNode(i int, next *int64, backoff *time.Duration) time.Duration {
	return c.nodes[i].topo.redial(c, i, next, backoff)
}

// redialConns redials node i's connections that should be up if due and
// returns how long until the next attempt (0: nothing waiting).
func (c *Client) redialConns(i int, next *int64, backoff *time.Duration) time.Duration {
	var down []*pconn
	for _, cn := range c.liveConns(i) {
		if cn.current() == nil {
			down = append(down, cn)
		}
	}
	if len(down) == 0 || c.closed.Load() {
		if len(down) == 0 && !c.closed.Load() && c.liveConns(i) != nil {
			c.nodes[i].down.Store(false)
		}
		return 0
	}
	if now := mono(); now < *next {
		return until(*next)
	}
	ok := true
	for _, cn := range down {
		if c.closed.Load() {
			return 0
		}
		if !c.connect(cn) {
			ok = false
			break // one failed dial per pass: the node is not back yet
		}
	}
	if ok {
		*backoff = 0
		*next = 0
		c.nodes[i].down.Store(false)
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
