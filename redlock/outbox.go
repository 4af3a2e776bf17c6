package redlock

import (
	"sync"
	"sync/atomic"
)

// outboxCap is how many keep-alive events may wait for the observer; an
// event beyond it is dropped and counted (Client.ObserverDropped).
const outboxCap = 4096

// outbox delivers the keep-alive scheduler's observer events (OpKeepAlive,
// the node errors and incarnations of its extensions, OpKeepAliveEnd) on a
// goroutine of its own, in the order they were put. The scheduler's loop
// and workers only put events here, under a short leaf mutex, and never run
// observer code: an observer that blocks holds up the delivery of the
// events behind it, never another lock's extension or deadline (issue 46:
// blocked on one lock's events on the workers, it ended every other lock's
// keep-alive). Two buffers are swapped, so nothing allocates once they
// have grown.
type outbox struct {
	c        *Client
	mu       sync.Mutex
	q, spare []Event
	closing  bool
	started  bool
	wake     chan struct{}
	done     chan struct{} // closed when run has delivered everything
	dropped  atomic.Uint64
}

// start starts the delivery goroutine, once (the scheduler's start; with
// an observer only).
func (o *outbox) start(c *Client) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.started || c.obs == nil {
		return
	}
	o.c, o.started = c, true
	o.wake = make(chan struct{}, 1)
	o.done = make(chan struct{})
	go o.run()
}

// put queues es for the observer (any goroutine, any scheduler mutex held:
// it takes only o.mu). Without a started outbox (no observer) it does
// nothing.
func (o *outbox) put(es ...Event) {
	if len(es) == 0 {
		return
	}
	o.mu.Lock()
	if !o.started {
		o.mu.Unlock()
		return
	}
	for i := range es {
		if len(o.q) >= outboxCap {
			o.dropped.Add(uint64(len(es) - i))
			break
		}
		o.q = append(o.q, es[i])
	}
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

func (o *outbox) run() {
	for {
		o.mu.Lock()
		for len(o.q) == 0 {
			if o.closing {
				o.mu.Unlock()
				close(o.done)
				return
			}
			o.mu.Unlock()
			<-o.wake
			o.mu.Lock()
		}
		evs := o.q
		o.q, o.spare = o.spare[:0], nil
		o.mu.Unlock()
		for _, e := range evs {
			o.c.emit(e) // its panics are recovered and counted
		}
		clear(evs) // no error kept beyond the call
		o.mu.Lock()
		if o.spare == nil {
			o.spare = evs[:0]
		}
		o.mu.Unlock()
	}
}

// close delivers what is queued and stops the goroutine; it returns once
// every event put before it has been delivered (Close's promise). Events
// put afterwards are dropped silently: the scheduler has stopped.
func (o *outbox) close() {
	o.mu.Lock()
	started := o.started
	o.closing = true
	o.mu.Unlock()
	if !started {
		return
	}
	select {
	case o.wake <- struct{}{}:
	default:
	}
	<-o.done
	o.mu.Lock()
	o.started = false
	o.mu.Unlock()
}

// ObserverDropped returns how many keep-alive events (OpKeepAlive, their
// node errors, OpKeepAliveEnd) were not delivered to the observer because
// 4096 were already waiting for it: an observer that blocks or falls far
// behind loses events, never keep-alives.
func (c *Client) ObserverDropped() uint64 { return c.ka.out.dropped.Load() }
