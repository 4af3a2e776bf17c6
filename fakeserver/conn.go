package fakeserver

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/redcon"
)

const readChunk = 16 << 10

// DefaultQueryBufferLimit is Config.QueryBufferLimit's default: 256 MiB
// of requests in flight per node (1,000 connections half-way through
// 1 MiB requests took the process to 2.4 GB before it; issue 34, R10).
const DefaultQueryBufferLimit = 256 << 20

// errQueryBuffer is the protocol error of a request that would pass the
// node's QueryBufferLimit.
var errQueryBuffer = protoError("the node's query buffer limit is reached (requests of other connections still arriving; Config.QueryBufferLimit)")

// chargeQuery takes extra bytes from the node's QueryBufferLimit; false
// when that would pass it.
func (n *Node) chargeQuery(extra int64) bool {
	lim := n.cfg.QueryBufferLimit
	for {
		cur := n.qbuf.Load()
		if lim > 0 && cur+extra > lim {
			return false
		}
		if n.qbuf.CompareAndSwap(cur, cur+extra) {
			return true
		}
	}
}

// release gives back what the connection's finished request held.
func (c *fconn) releaseQuery() {
	if c.handed > 0 {
		c.node.qbuf.Add(-c.handed)
		c.charged.Add(-c.handed)
		c.handed = 0
	}
}

// errProtocolClose is returned to redcon's reader after a protocol error
// reply has been queued: redcon then closes the connection.
var errProtocolClose = errors.New("fakeserver: connection closed after a protocol error")

// fconn wraps each accepted connection. Its Read side hands redcon only
// validated bytes, shaped so that redcon's read buffer stays bounded: one
// Read returns whole requests, or bytes of a single request. Its Write side
// applies the node's reply latency in FIFO order, with one writer goroutine
// per connection (started only when latency is in use).
type fconn struct {
	net.Conn
	node *Node

	// client state, touched only by the connection's redcon goroutine
	id      int64
	name    string
	proto   int
	db      int
	authed  bool
	user    string
	created time.Time

	// CLIENT TRACKING ON (redcon goroutine only): flushSeen is the node's
	// flushGen this connection was last told of (flushPush)
	tracking  bool
	flushSeen uint64

	// transaction state (redcon goroutine only; watches' versions under n.mu)
	inMulti    bool
	multiDirty bool
	multiQ     []queuedCmd
	watches    []watchRef
	// dropped watches whose references in n.watched are not yet released
	// (dropWatches could not take n.mu: a busy script holds it)
	stale []watchRef

	// read side (redcon goroutine only)
	rbuf     []byte
	r, v, w  int
	complete bool
	val      validator
	perr     error
	charged  atomic.Int64 // bytes charged to the node (chargeQuery): rbuf beyond readChunk, and handed
	handed   int64        // bytes of an unfinished request handed to redcon, charged
	xbuf     []byte       // inline request re-encoded as multibulk
	xr       int          // bytes of xbuf handed out
	lastRead atomic.Int64 // unix nanos of the last socket read

	// write side
	out        *outConn // counts reply bytes written by handlers
	outPending int      // reply bytes buffered in redcon since the last flush (redcon goroutine only)
	wmu        sync.Mutex
	wcond      *sync.Cond // signalled when queued bytes drop or the conn dies
	queued     int        // bytes waiting in queue
	queue      []delayed
	lastDue    time.Time
	writerOn   bool
	wake       chan struct{}
	done       chan struct{} // closed when the connection is closing
	kill       chan struct{} // closed when the connection is dropped
	closed     bool          // no more replies accepted
	killed     bool          // socket closed, delayed replies discarded
	doneOnce   sync.Once
	killOnce   sync.Once

	lost atomic.Bool // a request or reply was dropped by a Partition (faults.go)
}

type delayed struct {
	due time.Time
	b   []byte
}

func newFconn(c net.Conn, n *Node) *fconn {
	fc := &fconn{
		Conn:    c,
		node:    n,
		proto:   2,
		rbuf:    make([]byte, readChunk),
		wake:    make(chan struct{}, 1),
		done:    make(chan struct{}),
		kill:    make(chan struct{}),
		created: time.Now(),
	}
	fc.wcond = sync.NewCond(&fc.wmu)
	return fc
}

// Output bounds: a handler flushes redcon's reply buffer once it holds
// flushAfter bytes (so a pipeline of large replies to a client that does not
// read blocks on the socket instead of growing memory), and the latency
// queue holds at most maxQueued bytes before the handler waits for it.
const (
	flushAfter = 256 << 10
	maxQueued  = 4 << 20
)

// outConn is the redcon.Conn handlers write to; it counts the bytes of
// the replies so dispatch can flush large batches early.
// With drop set (a command run while replies are partitioned) it discards
// what the command writes.
type outConn struct {
	redcon.Conn
	fc   *fconn
	drop bool
}

func (o *outConn) WriteBulk(b []byte) {
	if o.drop {
		return
	}
	o.fc.outPending += len(b) + 16
	o.Conn.WriteBulk(b)
}

func (o *outConn) WriteBulkString(s string) {
	if o.drop {
		return
	}
	o.fc.outPending += len(s) + 16
	o.Conn.WriteBulkString(s)
}

func (o *outConn) WriteString(s string) {
	if o.drop {
		return
	}
	o.fc.outPending += len(s) + 3
	o.Conn.WriteString(s)
}

func (o *outConn) WriteError(s string) {
	if o.drop {
		return
	}
	o.fc.outPending += len(s) + 3
	o.Conn.WriteError(s)
}

func (o *outConn) WriteRaw(b []byte) {
	if o.drop {
		return
	}
	o.fc.outPending += len(b)
	o.Conn.WriteRaw(b)
}

func (o *outConn) WriteInt(v int) {
	if o.drop {
		return
	}
	o.fc.outPending += 8
	o.Conn.WriteInt(v)
}

func (o *outConn) WriteInt64(v int64) {
	if o.drop {
		return
	}
	o.fc.outPending += 8
	o.Conn.WriteInt64(v)
}

func (o *outConn) WriteUint64(v uint64) {
	if o.drop {
		return
	}
	o.fc.outPending += 8
	o.Conn.WriteUint64(v)
}

func (o *outConn) WriteNull() {
	if o.drop {
		return
	}
	o.fc.outPending += 5
	o.Conn.WriteNull()
}

func (o *outConn) WriteAny(v any) {
	if o.drop {
		return
	}
	o.fc.outPending += 16
	o.Conn.WriteAny(v)
}

func (o *outConn) WriteArray(n int) {
	if o.drop {
		return
	}
	o.fc.outPending += 8
	o.Conn.WriteArray(n)
}

// maxReadBuf bounds the read buffer, which holds at most one request in
// progress (see Read).
const maxReadBuf = MaxRequestBytes + 2*readChunk

// Read implements io.Reader for redcon with pre-validation.
//
// redcon's reader parses its whole buffer again after every Read that does
// not complete a request, so a large request handed over in socket-sized
// pieces costs time and garbage quadratic in its size. Read therefore hands
// out the bytes of a request in progress only when they fill p (redcon then
// doubles its buffer: a logarithmic number of re-parses), and otherwise
// keeps reading until the request is complete. Inline requests are parsed
// here and handed out re-encoded as multibulk (see inline.go).
func (c *fconn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n := 0
	for {
		if c.xr < len(c.xbuf) { // a converted inline request
			k := copy(p[n:], c.xbuf[c.xr:])
			c.xr += k
			n += k
			if c.xr == len(c.xbuf) {
				c.xr = 0
				c.xbuf = c.xbuf[:0]
				if cap(c.xbuf) > 4*readChunk {
					c.xbuf = nil
				}
			}
			if n == len(p) {
				return n, nil
			}
			continue
		}
		if c.perr != nil {
			if n > 0 {
				return n, nil
			}
			c.queueReply([]byte("-ERR " + c.perr.Error() + "\r\n"))
			return 0, errProtocolClose
		}
		if c.complete {
			switch {
			case c.val.empty:
				c.r = c.v
			case c.val.inline:
				var err error
				c.xbuf, err = appendInlineAsMultibulk(c.xbuf, c.rbuf[c.r:c.v])
				if err != nil {
					c.perr = err
					continue
				}
				c.r = c.v
			default:
				k := copy(p[n:], c.rbuf[c.r:c.v])
				c.r += k
				n += k
				if n == len(p) && c.r < c.v {
					return n, nil
				}
			}
			c.complete = false
			c.val.empty = false
			c.val.header = false
			c.val.inline = false
			c.releaseQuery() // redcon has the whole request now
			continue
		}
		if c.val.header && n == 0 && c.v-c.r >= len(p) {
			// a multibulk request in progress that fills p: redcon grows
			// its buffer and asks for more; what it holds of an
			// unfinished request is charged to the node
			if !c.node.chargeQuery(int64(len(p))) {
				c.perr = errQueryBuffer
				continue
			}
			c.handed += int64(len(p))
			c.charged.Add(int64(len(p)))
			k := copy(p, c.rbuf[c.r:c.v])
			c.r += k
			return k, nil
		}
		if c.v < c.w {
			unauth := c.authRequired()
			if unauth && n > 0 && c.val.st == vsStart {
				// let redcon run what it has first: it may be the AUTH
				// that lifts the unauthenticated limits
				return n, nil
			}
			k, done, err := c.val.step(c.rbuf[c.v:c.w], unauth)
			c.v += k
			if err != nil {
				c.perr = err
				continue
			}
			c.complete = done
			continue
		}
		if n > 0 {
			return n, nil
		}
		// need more bytes from the socket
		if c.r > 0 {
			copy(c.rbuf, c.rbuf[c.r:c.w])
			c.v -= c.r
			c.w -= c.r
			c.r = 0
		}
		if c.perr = c.sizeReadBuf(); c.perr != nil {
			continue
		}
		k, err := c.Conn.Read(c.rbuf[c.w:])
		if k > 0 {
			c.w += k
			c.lastRead.Store(time.Now().UnixNano())
		}
		if err != nil && k == 0 {
			return 0, err
		}
	}
}

// sizeReadBuf makes room in the read buffer for the next socket read: it
// gives back a large request's buffer once it is consumed, and doubles a
// full one, charged to the node's QueryBufferLimit; an error when the
// request cannot grow (the per-request limit, or the node's).
func (c *fconn) sizeReadBuf() error {
	if c.w == 0 && len(c.rbuf) > readChunk {
		c.node.qbuf.Add(-int64(len(c.rbuf) - readChunk))
		c.charged.Add(-int64(len(c.rbuf) - readChunk))
		c.rbuf = make([]byte, readChunk) // release a large request's buffer
	}
	if c.w < len(c.rbuf) {
		return nil
	}
	if len(c.rbuf) >= maxReadBuf {
		// ruled out by the validator's limits
		return protoError("request larger than the fake server's limit")
	}
	size := min(2*len(c.rbuf), maxReadBuf)
	extra := int64(size - len(c.rbuf))
	if !c.node.chargeQuery(extra) {
		return errQueryBuffer
	}
	c.charged.Add(extra)
	nb := make([]byte, size)
	copy(nb, c.rbuf[:c.w])
	c.rbuf = nb
	return nil
}

// authRequired reports whether the client must still authenticate; Redis
// then accepts only small requests (see validator.step).
func (c *fconn) authRequired() bool { return !c.authed && c.out != nil }

// Write is called by redcon's Flush with a batch of replies.
func (c *fconn) Write(b []byte) (int, error) {
	return len(b), c.queueReply(b)
}

func (c *fconn) queueReply(b []byte) error {
	c.outPending = 0
	fixed, jitter := c.node.latency()
	c.wmu.Lock()
	for c.queued > maxQueued && !c.killed {
		c.wcond.Wait()
	}
	if c.closed {
		c.wmu.Unlock()
		return net.ErrClosed
	}
	if fixed == 0 && jitter == 0 && len(c.queue) == 0 && !c.writerOn {
		c.wmu.Unlock()
		_, err := c.Conn.Write(b)
		return err
	}
	d := fixed
	if jitter > 0 {
		d += randDuration(jitter)
	}
	due := time.Unix(0, c.lastRead.Load()).Add(d)
	if due.Before(c.lastDue) {
		due = c.lastDue
	}
	c.lastDue = due
	c.queue = append(c.queue, delayed{due: due, b: append([]byte(nil), b...)})
	c.queued += len(b)
	start := !c.writerOn
	c.writerOn = true
	c.wmu.Unlock()
	if start {
		c.node.connWG.Add(1)
		go c.writer()
	} else {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
	return nil
}

// writer writes delayed replies at their due time, in order.
func (c *fconn) writer() {
	defer c.node.connWG.Done()
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		c.wmu.Lock()
		if c.killed {
			c.writerOn = false
			c.wmu.Unlock()
			return
		}
		if len(c.queue) == 0 {
			if c.closed { // Close asked to drain; drained now
				c.writerOn = false
				c.wmu.Unlock()
				c.closeNow()
				return
			}
			c.wmu.Unlock()
			select {
			case <-c.wake:
			case <-c.done:
			case <-c.kill:
			}
			continue
		}
		it := c.queue[0]
		c.wmu.Unlock()
		if wait := time.Until(it.due); wait > 0 {
			t.Reset(wait)
			select {
			case <-t.C:
			case <-c.kill:
				continue
			}
		}
		if _, err := c.Conn.Write(it.b); err != nil {
			c.closeNow()
			continue
		}
		c.wmu.Lock()
		if len(c.queue) > 0 {
			c.queued -= len(c.queue[0].b)
			c.queue[0] = delayed{}
			c.queue = c.queue[1:]
		}
		c.wcond.Broadcast()
		c.wmu.Unlock()
	}
}

// Close is called by redcon when the connection ends (QUIT, protocol error,
// read error). Replies still waiting for their latency are delivered first.
func (c *fconn) Close() error {
	c.wmu.Lock()
	if c.closed {
		c.wmu.Unlock()
		return nil
	}
	c.closed = true
	if c.writerOn && len(c.queue) > 0 {
		c.wmu.Unlock()
		c.doneOnce.Do(func() { close(c.done) })
		return nil
	}
	c.wmu.Unlock()
	return c.closeNow()
}

// closeNow drops the connection at once, discarding delayed replies.
func (c *fconn) closeNow() error {
	c.wmu.Lock()
	c.closed = true
	c.killed = true
	c.queue = nil
	c.queued = 0
	c.wcond.Broadcast()
	c.wmu.Unlock()
	c.doneOnce.Do(func() { close(c.done) })
	c.killOnce.Do(func() { close(c.kill) })
	return c.Conn.Close()
}

// waitDrained waits until no delayed reply is pending, up to d.
func (c *fconn) waitDrained(d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) && !c.node.closed.Load() {
		c.wmu.Lock()
		empty := len(c.queue) == 0
		c.wmu.Unlock()
		if empty {
			return
		}
		time.Sleep(time.Millisecond)
	}
}
