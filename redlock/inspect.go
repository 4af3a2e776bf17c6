package redlock

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/redmux/redmux/mux"
	"github.com/redmux/redmux/resp"
)

// Inspection is what the nodes say about a resource: per node, the value
// that holds it and its remaining time to live on that node's clock, and
// whether a quorum agrees on one holder. It is a snapshot: by the time it
// is read, keys may have expired or been taken. Validity decides for a
// holder; Inspection is for operators, dashboards and tests.
type Inspection struct {
	Resource string
	Nodes    []NodeHolding
	// Holder is the value a quorum of nodes holds, nil if no value is held
	// by a quorum (free, or split between values or by failures).
	Holder []byte
	// Agree is how many nodes hold Holder (the most common value's count
	// when no quorum agrees).
	Agree int
	// Quorum is the client's quorum; Held reports Agree >= Quorum.
	Quorum int
	// TTL is, for a quorum-held Holder, how long at least Quorum nodes
	// will still hold it by their own clocks (the Quorum-th longest PTTL
	// among its nodes): an estimate of when the lock is free for others
	// if its holder neither releases nor extends. 0 when not held.
	TTL time.Duration
}

// Held reports whether a quorum of nodes holds one value.
func (in Inspection) Held() bool { return in.Holder != nil }

// HeldBy reports whether a quorum holds l's value.
func (in Inspection) HeldBy(l Lock) bool {
	v := l.ValueArray()
	return in.Holder != nil && bytes.Equal(in.Holder, v[:])
}

// NodeHolding is one node's answer to Inspect.
type NodeHolding struct {
	Node  int
	Addr  string
	Value []byte        // the value holding the resource; nil if the key is absent
	TTL   time.Duration // remaining time to live (PTTL); -1 for a key without expiry, 0 when absent
	Err   error         // the node did not answer (timeout, down, error reply)
}

// Inspect asks every node, in one round trip (GET and PTTL pipelined on
// the resource's connection to each node, waiting at most the node
// timeout), who holds resource and for how long. A key that expires
// between its GET and PTTL is reported absent. Inspect allocates (it copies
// the values out); it is not meant for the hot path. It fails only when no
// node could be asked (ctx done, client closed); per-node failures are in
// Nodes.
func (c *Client) Inspect(ctx context.Context, resource string) (Inspection, error) {
	if resource == "" {
		return Inspection{}, fmt.Errorf("%w: empty resource name", ErrBadOption)
	}
	if c.closed.Load() {
		return Inspection{}, ErrClosed
	}
	w := c.getWorker()
	defer c.putWorker(w)
	b := w.b
	b.Reset()
	b.SetKey(resource)
	w.cmd = resp.AppendCommand(w.cmd[:0], "GET", resource)
	b.BroadcastExpect(w.cmd, mux.ExpectBulk|mux.ExpectNil)
	w.cmd = resp.AppendCommand(w.cmd[:0], "PTTL", resource)
	b.BroadcastExpect(w.cmd, mux.ExpectInt)
	_, err := c.m.Do(ctx, b, mux.Policy{Timeout: c.def.nodeTimeout})
	if err != nil {
		return Inspection{}, wrapOp("inspect", resource, closedErr(err))
	}
	in := Inspection{Resource: resource, Quorum: c.quorum, Nodes: make([]NodeHolding, c.n)}
	for i := range in.Nodes {
		h := NodeHolding{Node: i, Addr: c.addrs[i]}
		g, gerr := b.Reply(i, 0)
		p, perr := b.Reply(i, 1)
		switch {
		case gerr != nil:
			h.Err = closedErr(gerr)
		case perr != nil:
			h.Err = closedErr(perr)
		default:
			ms, ok := p.Int()
			switch {
			case !ok:
				h.Err = fmt.Errorf("node %d: unexpected PTTL reply %s", i, p.String())
			case g.IsNil() || ms == -2: // absent (or expired between the two)
			case g.Type != resp.TypeBulkString && g.Type != resp.TypeSimpleString:
				h.Err = fmt.Errorf("node %d: unexpected GET reply %s", i, g.String())
			default:
				h.Value = bytes.Clone(g.Data)
				if ms < 0 {
					h.TTL = -1
				} else {
					h.TTL = time.Duration(ms) * time.Millisecond
				}
			}
		}
		in.Nodes[i] = h
	}
	// the most common value, and its TTL over a quorum
	for i, h := range in.Nodes {
		if h.Value == nil {
			continue
		}
		n := 0
		for _, o := range in.Nodes[i:] {
			if bytes.Equal(o.Value, h.Value) {
				n++
			}
		}
		if n > in.Agree {
			in.Agree = n
			in.Holder = h.Value
		}
	}
	if in.Agree < c.quorum {
		in.Holder = nil
		return in, nil
	}
	ttls := make([]time.Duration, 0, in.Agree)
	for _, h := range in.Nodes {
		if bytes.Equal(h.Value, in.Holder) {
			t := h.TTL
			if t < 0 {
				t = time.Duration(1<<63 - 1) // no expiry
			}
			ttls = append(ttls, t)
		}
	}
	slices.Sort(ttls)
	slices.Reverse(ttls)
	in.TTL = ttls[c.quorum-1]
	return in, nil
}
