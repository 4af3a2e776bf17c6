package mux

import (
	"github.com/redmux/redmux/resp"
)

// result is one command's reply: its frame (leading attributes included)
// copied into Batch.rbuf at [off, off+n), or nothing yet.
type result struct {
	off, n int
	got    bool
	isErr  bool
}

// Batch holds, per node, the commands of one Do and, after it, the replies.
// A Batch is not safe for concurrent use; reuse it (Reset) to avoid
// allocation. Replies are copied out of the connection's buffer into the
// batch, so they stay valid until the batch is Reset or used again by Do.
type Batch struct {
	n       int
	cmds    [][]byte // per node: its commands, concatenated
	offs    [][]int  // per node: start offset of each command in cmds
	bad     error    // set by Add when a command is not exactly one frame
	scratch []byte

	// results of the last Do
	res    [][]result
	errs   []error // node-level error (timeout, down, ...)
	rbuf   []byte  // reply bytes
	parser resp.Parser

	// lane the last Do ran on: the next Do takes it again when it is free,
	// so a batch's commands follow its earlier ones on the same connections
	// (a release after a failed acquire cannot overtake that acquire's SET
	// on a slow node).
	lane *lane
}

// NewBatch returns an empty batch sized for c.
func (c *Client) NewBatch() *Batch { return newBatch(c.n, c.cfg.Parser) }

func newBatch(n int, p resp.Parser) *Batch {
	b := &Batch{
		n:      n,
		cmds:   make([][]byte, n),
		offs:   make([][]int, n),
		res:    make([][]result, n),
		errs:   make([]error, n),
		parser: p,
	}
	return b
}

// N returns the number of nodes the batch is sized for.
func (b *Batch) N() int { return b.n }

// Reset drops commands and results and keeps the buffers.
func (b *Batch) Reset() {
	for i := 0; i < b.n; i++ {
		b.cmds[i] = b.cmds[i][:0]
		b.offs[i] = b.offs[i][:0]
		b.res[i] = b.res[i][:0]
		b.errs[i] = nil
	}
	b.rbuf = b.rbuf[:0]
	b.bad = nil
}

// Add appends one complete encoded command (for example from
// resp.AppendCommand) for node. cmd is copied. A cmd that is not exactly one
// well-formed RESP frame, or a node out of range, makes the next Do fail
// with ErrBadBatch.
func (b *Batch) Add(node int, cmd []byte) {
	if node < 0 || node >= b.n {
		b.bad = ErrBadBatch
		return
	}
	if !oneFrame(cmd) {
		b.bad = ErrBadBatch
		return
	}
	b.add(node, cmd)
}

func (b *Batch) add(node int, cmd []byte) {
	b.offs[node] = append(b.offs[node], len(b.cmds[node]))
	b.cmds[node] = append(b.cmds[node], cmd...)
}

// Broadcast adds the same command to every node (see Add).
func (b *Batch) Broadcast(cmd []byte) {
	if !oneFrame(cmd) {
		b.bad = ErrBadBatch
		return
	}
	for i := 0; i < b.n; i++ {
		b.add(i, cmd)
	}
}

var cmdParser = resp.Parser{}

func oneFrame(cmd []byte) bool {
	if len(cmd) == 0 || cmd[0] != resp.TypeArray {
		return false
	}
	n, err := cmdParser.Skip(cmd)
	return err == nil && n == len(cmd)
}

// Scratch returns a reusable empty buffer (len 0) to encode a command into
// before Add or Broadcast; it is valid until the next Scratch or Reset.
// Store the grown slice back with SetScratch to keep its capacity.
func (b *Batch) Scratch() []byte { return b.scratch[:0] }

// SetScratch keeps buf (typically the result of appending to Scratch()) as
// the batch's scratch buffer, so its capacity is reused.
func (b *Batch) SetScratch(buf []byte) { b.scratch = buf[:0] }

// Commands returns how many commands node has in the batch.
func (b *Batch) Commands(node int) int {
	if node < 0 || node >= b.n {
		return 0
	}
	return len(b.offs[node])
}

// Reply returns node's k-th reply (0-based) or its error. An error reply
// is returned with a *ServerError (errors.Is(err, ErrServer)); a command
// whose reply did not arrive gets the node's error (ErrTimeout, ErrPending,
// ErrNodeDown, ErrConnBroken, ErrProtocol or ErrNotSent). The reply is a
// view into the batch, valid until the batch is Reset or reused.
func (b *Batch) Reply(node, k int) (resp.Reply, error) {
	if node < 0 || node >= b.n || k < 0 || k >= len(b.offs[node]) {
		return resp.Reply{}, ErrBadBatch
	}
	rs := b.res[node]
	if k >= len(rs) || !rs[k].got {
		if e := b.errs[node]; e != nil {
			return resp.Reply{}, e
		}
		return resp.Reply{}, ErrNotSent
	}
	r := rs[k]
	rep, _, err := b.parser.Parse(b.rbuf[r.off : r.off+r.n])
	if err != nil { // cannot happen: the frame parsed when it arrived
		return resp.Reply{}, &NodeError{Node: node, Kind: ErrProtocol, Cause: err}
	}
	if r.isErr {
		return rep, &ServerError{Node: node, Text: string(rep.Data)}
	}
	return rep, nil
}

// Last returns node's reply to its last command (see Reply).
func (b *Batch) Last(node int) (resp.Reply, error) {
	if node < 0 || node >= b.n {
		return resp.Reply{}, ErrBadBatch
	}
	return b.Reply(node, len(b.offs[node])-1)
}

// Err returns nil if every command of node got a non-error reply; else the
// node's error or its first error reply (*ServerError).
func (b *Batch) Err(node int) error {
	if node < 0 || node >= b.n {
		return ErrBadBatch
	}
	k := len(b.offs[node])
	if k == 0 {
		return nil
	}
	rs := b.res[node]
	for i := 0; i < k; i++ {
		if i >= len(rs) || !rs[i].got {
			if e := b.errs[node]; e != nil {
				return e
			}
			return ErrNotSent
		}
		if rs[i].isErr {
			_, err := b.Reply(node, i)
			return err
		}
	}
	return nil
}

// cmd returns node's k-th command bytes.
func (b *Batch) cmd(node, k int) []byte {
	o := b.offs[node]
	end := len(b.cmds[node])
	if k+1 < len(o) {
		end = o[k+1]
	}
	return b.cmds[node][o[k]:end]
}

// begin prepares the result slots for a Do.
func (b *Batch) begin() {
	b.rbuf = b.rbuf[:0]
	for i := 0; i < b.n; i++ {
		k := len(b.offs[i])
		if cap(b.res[i]) < k {
			b.res[i] = make([]result, k)
		}
		b.res[i] = b.res[i][:k]
		clear(b.res[i])
		b.errs[i] = nil
	}
}

// store copies a reply frame for node's command k.
func (b *Batch) store(node, k int, frame []byte, isErr bool) {
	off := len(b.rbuf)
	b.rbuf = append(b.rbuf, frame...)
	b.res[node][k] = result{off: off, n: len(frame), got: true, isErr: isErr}
}

// frame returns the stored frame of node's command k as a Reply (valid
// until rbuf is appended to).
func (b *Batch) frame(node, k int) (resp.Reply, bool) {
	r := b.res[node][k]
	if !r.got {
		return resp.Reply{}, false
	}
	rep, _, err := b.parser.Parse(b.rbuf[r.off : r.off+r.n])
	return rep, err == nil
}
