package mux

import (
	"context"

	"github.com/redmux/redmux/internal/lockcmd"
	"github.com/redmux/redmux/redlock/scripts"
)

// lockWork is one acquire (SET NX PX) and one release (EVALSHA) broadcast.
type lockWork struct {
	c     *Client
	b     *Batch
	cmd   []byte
	key   string
	val   [20]byte
	n     uint64
	fails int
}

func newLockWork(c *Client) *lockWork {
	return &lockWork{c: c, b: c.NewBatch(), cmd: make([]byte, 0, 256), key: uniqueKey("alloc")}
}

func (w *lockWork) next() {
	w.n++
	for i := 0; i < 8; i++ {
		w.val[i] = byte(w.n >> (8 * i))
	}
}

func (w *lockWork) op(ctx context.Context) {
	w.next()
	w.b.Reset()
	w.cmd = lockcmd.AppendSetNXPX(w.cmd[:0], w.key, w.val[:], 10000)
	w.b.Broadcast(w.cmd)
	out, err := w.c.Do(ctx, w.b, Policy{Success: isOK})
	if err != nil || out.Successes != w.c.N() {
		w.fails++
	}
	w.b.Reset()
	w.cmd = lockcmd.AppendEvalSHA(w.cmd[:0], scripts.Release.SHA, w.key, w.val[:])
	w.b.Broadcast(w.cmd)
	out, err = w.c.Do(ctx, w.b, Policy{Success: isOne})
	if err != nil || out.Successes != w.c.N() {
		w.fails++
	}
}

func (w *lockWork) opQuorum(ctx context.Context) {
	w.next()
	w.b.Reset()
	w.cmd = lockcmd.AppendSetNXPX(w.cmd[:0], w.key, w.val[:], 10000)
	w.b.Broadcast(w.cmd)
	_, _ = w.c.Do(ctx, w.b, Policy{Success: isOK, Quorum: 1})
	w.b.Reset()
	w.cmd = lockcmd.AppendEvalSHA(w.cmd[:0], scripts.Release.SHA, w.key, w.val[:])
	w.b.Broadcast(w.cmd)
	_, _ = w.c.Do(ctx, w.b, Policy{Success: isOne, Quorum: 1})
}
