package mux

import (
	"sync"
	"time"

	"github.com/redmux/redmux/resp"
)

// span is one command's bytes in the batch's buf: buf[off:end].
type span struct{ off, end int }

// result is one command's reply: its frame (leading attributes included)
// copied into the batch's reply buffer at [off, off+n), or nothing yet.
type result struct {
	off, n  int
	shape   resp.Shape // the frame's parse on arrival
	got     bool
	isErr   bool
	retried bool // the NOSCRIPT fallback was used for this command
	// redirected: a cluster node's MOVED or ASK was followed for this
	// command (resent to the primary it named, once)
	redirected bool
}

// Batch holds, per node, the commands of one Do and, after it, the replies.
// A Batch is used by one goroutine at a time; reuse it (Reset) to avoid
// allocation. Replies are copied into the batch as they arrive, so they
// stay valid until the batch is Reset or used again by Do.
type Batch struct {
	n int
	// buf holds every command's bytes once: a broadcast command is
	// encoded (copied) once and each node's span refers to it.
	buf     []byte
	cmds    [][]span   // per node: its commands, in order
	size    []int      // per node: its commands' bytes
	exp     [][]Expect // per node: the reply kinds each command expects
	nshared []int      // per node: its trailing shared commands (AddShared)
	claims  []*pconn   // Do's claimed writer roles (reused; cap n)
	bad     error      // set by Add when a command is not exactly one frame
	scratch []byte
	route   uint32 // picks the connection to each node (SetKey)
	slot    uint16 // the key's Redis Cluster slot (SetKey, on a client with a cluster node)
	keyed   bool   // SetKey was called
	// unrouted: made by a client with one connection per node, where
	// the route picks nothing (SetKey does not hash the key; route is 0)
	unrouted bool
	slotted  bool        // made by a client with a node that routes by key slot (a cluster node)
	kinds    []nodeKinds // the client's per-node errors (nil: bare sentinels)

	// wait is how Do sleeps: the reader side signals wake once the call is
	// decided; a token holder also signals it when a registered follower's
	// deadline passes (shard, regIdx), and the timer bounds the other waits.
	wake   chan struct{}
	timer  *time.Timer
	shard  uint8 // the token driver's wait registry shard (NewBatch)
	regIdx int   // index in that shard while registered (under its lock)

	mu   sync.Mutex // guards call against the reader side
	call call
}

// call is the state of one Do on a batch, shared with the goroutines that
// read replies. Replies carry the generation they were sent under; once
// Do returns, gen moves on and late replies are dropped (abandoned).
type call struct {
	gen  uint64
	live bool // Do is waiting; replies of this gen are stored
	pol  Policy
	// res is every node's results, node i's at nodes[i]; one slice and
	// one small per-node array, so that the reader's first touch of a
	// call (store) meets few cache lines the caller wrote on its core
	res      []result
	nodes    []nodeCall
	errs     []error // node-level error (timeout, down, ...)
	rbuf     []byte  // reply bytes
	cleared  bool    // Reset (or a Do refused before it began) since the last call: no results
	active   int
	open     int
	succ     int
	fail     int
	decided  bool
	signaled bool
	panicked *PanicError // Policy.Success panicked: the call's error
}

// nodeCall is one node's part of a call: its results are
// res[off : off+n], got of them stored; done once it has them all or
// failed.
type nodeCall struct {
	off, n, got int32
	done        bool
}

// results returns node's results in the current call.
func (cl *call) results(node int) []result {
	nc := &cl.nodes[node]
	return cl.res[nc.off : nc.off+nc.n]
}

// result returns node's k-th result in the last call, or nil when that
// call had no command k for node or the results were cleared since.
func (cl *call) result(node, k int) *result {
	nc := &cl.nodes[node]
	if cl.cleared || k >= int(nc.n) {
		return nil
	}
	return &cl.res[int(nc.off)+k]
}

// reply is the stored reply, read through the parse done on arrival.
func (r *result) reply(rbuf []byte) resp.Reply { return r.shape.At(rbuf[r.off : r.off+r.n]) }

// NewBatch returns an empty batch sized for c.
func (c *Client) NewBatch() *Batch {
	b := newBatch(c.n)
	b.kinds = c.kinds
	b.slotted = c.slotted
	b.unrouted = c.cfg.Conns == 1
	b.shard = uint8(c.batches.Add(1))
	return b
}

func newBatch(n int) *Batch {
	return &Batch{
		n:       n,
		cmds:    make([][]span, n),
		size:    make([]int, n),
		exp:     make([][]Expect, n),
		nshared: make([]int, n),
		claims:  make([]*pconn, 0, n),
		wake:    make(chan struct{}, 1),
		call: call{
			nodes: make([]nodeCall, n),
			errs:  make([]error, n),
		},
	}
}

// N returns the number of nodes the batch is sized for.
func (b *Batch) N() int { return b.n }

// Reset drops commands and results and keeps the buffers and the key.
func (b *Batch) Reset() {
	b.buf = b.buf[:0]
	for i := 0; i < b.n; i++ {
		b.cmds[i] = b.cmds[i][:0]
		b.size[i] = 0
		b.exp[i] = b.exp[i][:0]
		b.nshared[i] = 0
	}
	b.bad = nil
	b.clearResults()
}

// clearResults drops the results of an earlier call: Do runs it when it
// returns before starting a call, so no earlier reply is shown as this
// call's. Only the batch's owner reads or writes cleared (the reader side
// never does, and touches no result once the call has ended), so it
// takes no lock; the next call's begin resets the results themselves.
func (b *Batch) clearResults() { b.call.cleared = true }

// SetKey routes the batch: batches with the same key use the same
// connection to each node, so their commands reach each node in the order
// their Do calls queued them (a release never overtakes its own acquire on
// a slow node). With Config.Conns = 1 (the default) every batch shares one
// connection per node and the key changes nothing. The key is kept across
// Reset; it is hashed, not stored (and not even hashed by a batch of a
// client with one connection per node: a batch keeps its client's routing,
// so used on a client with more it sends all its commands on the first).
//
// On a Redis Cluster node the key also picks the shard: every command of
// the batch goes to the primary of the key's slot (KeySlot), so all the
// batch's keys must share that slot (a hash tag: "{user:1}:a" and
// "{user:1}:b"). A batch without a key fails on a cluster node.
func (b *Batch) SetKey(key string) {
	b.keyed = true
	if b.slotted {
		b.slot = keySlot(key)
	}
	if b.unrouted {
		return
	}
	// FNV-1a: no allocation, good enough to spread keys over a few connections.
	h := uint32(2166136261)
	for i := 0; i < len(key); i++ {
		h ^= uint32(key[i])
		h *= 16777619
	}
	b.route = h
}

// Add appends one complete encoded command (for example from
// resp.AppendCommand) for node. cmd is copied. A cmd that is not exactly one
// request as Redis reads it (a RESP array of one or more bulk strings), or a
// node out of range, makes the next Do fail with ErrBadBatch. The reply may be
// of any kind (see AddExpect).
func (b *Batch) Add(node int, cmd []byte) { b.AddExpect(node, cmd, ExpectAny) }

// AddExpect is Add for a command whose reply must be of a kind in e (or an
// error reply): a reply of another kind breaks the connection (ErrProtocol)
// instead of being delivered. See Expect.
func (b *Batch) AddExpect(node int, cmd []byte, e Expect) {
	if node < 0 || node >= b.n {
		b.bad = ErrBadBatch
		return
	}
	if !oneFrame(cmd) {
		b.bad = ErrBadBatch
		return
	}
	b.add(node, b.put(cmd), e)
}

// put copies cmd into the batch's buf and returns where it is.
func (b *Batch) put(cmd []byte) span {
	off := len(b.buf)
	b.buf = append(b.buf, cmd...)
	return span{off, len(b.buf)}
}

// add appends the command at sp in buf to node's commands.
func (b *Batch) add(node int, sp span, e Expect) {
	if b.nshared[node] > 0 {
		b.bad = ErrBadBatch // a shared command must come last (AddShared)
	}
	b.cmds[node] = append(b.cmds[node], sp)
	b.exp[node] = append(b.exp[node], e)
	b.size[node] += sp.end - sp.off
}

// Broadcast adds the same command to every node (see Add).
func (b *Batch) Broadcast(cmd []byte) { b.BroadcastExpect(cmd, ExpectAny) }

// BroadcastExpect adds the same command to every node (see AddExpect).
func (b *Batch) BroadcastExpect(cmd []byte, e Expect) {
	if !oneFrame(cmd) {
		b.bad = ErrBadBatch
		return
	}
	sp := b.put(cmd) // once for every node
	for i := 0; i < b.n; i++ {
		b.add(i, sp, e)
	}
}

// oneFrame reports whether cmd is exactly one request as Redis reads it:
// an array of one or more bulk strings. Redis answers nothing to an empty
// array (*0 or *-1) and breaks the connection on any other element type,
// so either would shift every reply after it on a shared connection.
func oneFrame(cmd []byte) bool {
	if len(cmd) == 0 || cmd[0] != resp.TypeArray {
		return false
	}
	n, i, ok := reqLen(cmd, 1)
	if !ok || n < 1 {
		return false
	}
	for ; n > 0; n-- {
		if i >= len(cmd) || cmd[i] != resp.TypeBulkString {
			return false
		}
		var l int
		if l, i, ok = reqLen(cmd, i+1); !ok || l > len(cmd)-i-2 {
			return false
		}
		i += l
		if cmd[i] != '\r' || cmd[i+1] != '\n' {
			return false
		}
		i += 2
	}
	return i == len(cmd)
}

// reqLen reads a request header's length at cmd[i:]: decimal digits (no
// sign, at most 10) and CRLF. It returns the length and the index after
// the CRLF.
func reqLen(cmd []byte, i int) (n, next int, ok bool) {
	start := i
	for ; i < len(cmd) && cmd[i] >= '0' && cmd[i] <= '9'; i++ {
		if i-start == 10 {
			return 0, 0, false
		}
		n = n*10 + int(cmd[i]-'0')
	}
	if i == start || i+1 >= len(cmd) || cmd[i] != '\r' || cmd[i+1] != '\n' {
		return 0, 0, false
	}
	return n, i + 2, true
}

// scratchSize is Scratch's first capacity: every lock command (a SET NX PX
// or an EVALSHA of a lock script with a key of a few hundred bytes) fits.
const scratchSize = 512

// Scratch returns a reusable empty buffer (len 0, capacity at least 512
// bytes, allocated once per batch) to encode a command into before Add or
// Broadcast, which copy it; it is valid until the next Scratch or Reset.
// Encoding a command that fits allocates nothing; one that outgrows it
// allocates, unless the grown slice is stored back with SetScratch.
func (b *Batch) Scratch() []byte {
	if b.scratch == nil {
		b.scratch = make([]byte, 0, scratchSize)
	}
	return b.scratch[:0]
}

// SetScratch keeps buf (typically the result of appending to Scratch()) as
// the batch's scratch buffer, so its capacity is reused.
func (b *Batch) SetScratch(buf []byte) { b.scratch = buf[:0] }

// Commands returns how many commands node has in the batch.
func (b *Batch) Commands(node int) int {
	if node < 0 || node >= b.n {
		return 0
	}
	return len(b.cmds[node])
}

// Reply returns node's k-th reply (0-based) or its error. An error reply
// is returned with a *ServerError (errors.Is(err, ErrServer)); a command
// whose reply did not arrive gets the node's error (ErrTimeout, ErrPending,
// ErrNodeDown, ErrConnBroken, ErrProtocol or ErrNotSent). The reply is a
// view into the batch, valid until the batch is Reset or reused. Call it
// after Do has returned, from the goroutine that called Do.
func (b *Batch) Reply(node, k int) (resp.Reply, error) {
	if node < 0 || node >= b.n || k < 0 || k >= len(b.cmds[node]) {
		return resp.Reply{}, ErrBadBatch
	}
	cl := &b.call
	r := cl.result(node, k)
	if r == nil || !r.got {
		if e := cl.errs[node]; e != nil && !cl.cleared {
			return resp.Reply{}, e
		}
		return resp.Reply{}, kindErr(b.kinds, node, ErrNotSent)
	}
	rep := r.reply(cl.rbuf)
	if r.isErr {
		var secrets []string
		if b.kinds != nil {
			secrets = b.kinds[node].secrets
		}
		return rep, &ServerError{Node: node, Text: cleanText(string(rep.Data), maxCause, secrets)}
	}
	return rep, nil
}

// Last returns node's reply to its last command (see Reply).
func (b *Batch) Last(node int) (resp.Reply, error) {
	if node < 0 || node >= b.n {
		return resp.Reply{}, ErrBadBatch
	}
	return b.Reply(node, len(b.cmds[node])-1)
}

// Err returns nil if every command of node got a non-error reply; else the
// node's error or its first error reply (*ServerError).
func (b *Batch) Err(node int) error {
	if node < 0 || node >= b.n {
		return ErrBadBatch
	}
	k := len(b.cmds[node])
	cl := &b.call
	for i := 0; i < k; i++ {
		r := cl.result(node, i)
		if r == nil || !r.got {
			if e := cl.errs[node]; e != nil && !cl.cleared {
				return e
			}
			return kindErr(b.kinds, node, ErrNotSent)
		}
		if r.isErr {
			_, err := b.Reply(node, i)
			return err
		}
	}
	return nil
}

// cmd returns node's k-th command bytes.
func (b *Batch) cmd(node, k int) []byte {
	sp := b.cmds[node][k]
	return b.buf[sp.off:sp.end]
}
