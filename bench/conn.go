package bench

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/redmux/redmux/internal/nodeaddr"
	"github.com/redmux/redmux/mux"
	"github.com/redmux/redmux/redlock"
	"github.com/redmux/redmux/resp"
)

// Errors of the plain-connection strategies (seq, fanout) and the preflight
// check. Match with errors.Is. Their texts carry no "bench:" prefix: they
// are wrapped in context (a node, a file), and the command adds its own
// "redmux-bench:" in front.
var (
	// errAuth: a node refused AUTH (wrong user or password). The password is
	// never part of the message.
	errAuth = errors.New("authentication failed")
	// errAuthRequired: a node requires a password and none was given.
	errAuthRequired = errors.New("authentication required (set " + envPassword + " or -password)")
	// errServerReply: a node answered with an error reply.
	errServerReply = errors.New("server error reply")
	// errNoQuorum: so many nodes failed that a quorum was out of reach.
	errNoQuorum = errors.New("quorum out of reach (node failures)")
	// errValidity: a quorum was reached but the lock's validity had already
	// run out (the acquire took longer than ttl minus drift).
	errValidity = errors.New("lock acquired too late, validity expired")
	// errNotRedis: a node's first reply did not begin with a RESP type
	// byte: the peer is likely no Redis server (a web server, an SSH
	// daemon, a TLS server spoken to in plaintext).
	errNotRedis = errors.New("the node's first reply is not RESP (is this a Redis server?)")
	// errReplyTooBig: a reply larger than the plain connection's buffer cap.
	errReplyTooBig = errors.New("reply too large")
)

const maxReadBuf = 1 << 20

// connOpts are the connection settings shared by every plain connection;
// a node URL's own user, password, db and TLS options win over them.
type connOpts struct {
	user, password string
	db             int
	tls            *tls.Config // every node over TLS (-tls); nil: only rediss:// nodes
	dialTimeout    time.Duration
	timeout        time.Duration // per node, per command
}

// node resolves addr (host:port or a redis:// or rediss:// URL) as mux
// does, so every strategy reaches a node the same way.
func (o *connOpts) node(addr string) (nodeaddr.Node, error) {
	na, err := nodeaddr.Parse(-1, addr, nodeaddr.Defaults{Username: o.user, Password: o.password, DB: o.db, TLS: o.tls})
	if err == nil && na.Sentinel != nil {
		// mux asks the sentinels at every dial; a plain connection has a
		// fixed address
		return na, fmt.Errorf("node %s: a %s:// node's primary is found by mux at every dial: measure it with -strategy mux (seq and fanout dial fixed addresses)", na.Display, nodeaddr.SentinelScheme)
	}
	if err == nil && na.Cluster != nil {
		return na, fmt.Errorf("node %s: a %s:// node's keys are on the primaries of their slots, which mux routes to: measure it with -strategy mux (seq and fanout dial fixed addresses)", na.Display, nodeaddr.ClusterScheme)
	}
	return na, err
}

// plainConn is one blocking net.Conn to one node, as a naive client holds
// it: a command is written, then its reply is read, with a deadline. After
// any transport or protocol error the connection is closed and redialled on
// next use (on the caller's path, as naive clients do).
type plainConn struct {
	addr string
	node nodeaddr.Node // addr resolved; perr if it does not resolve
	perr error
	opt  *connOpts
	c    net.Conn
	wbuf []byte
	rbuf []byte
	r, w int
	p    resp.Parser
}

func newPlainConn(addr string, opt *connOpts) *plainConn {
	pc := &plainConn{addr: addr, opt: opt, wbuf: make([]byte, 0, 512), rbuf: make([]byte, 4096)}
	pc.node, pc.perr = opt.node(addr)
	return pc
}

func (pc *plainConn) close() {
	if pc.c != nil {
		_ = pc.c.Close()
		pc.c = nil
	}
	pc.r, pc.w = 0, 0
}

// connect dials (and runs the TLS handshake for a TLS node) and runs the
// set-up pipeline: AUTH, SELECT, SCRIPT LOAD of every lock script. Replies
// are read within the per-node timeout (at least the dial timeout for the
// first connection of a run).
func (pc *plainConn) connect(ctx context.Context, setupTimeout time.Duration) error {
	pc.close()
	if pc.perr != nil {
		return pc.perr
	}
	nd := &pc.node
	d := net.Dialer{Timeout: pc.opt.dialTimeout}
	c, err := d.DialContext(ctx, "tcp", nd.Addr())
	if err != nil {
		return err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	if nd.TLS != nil {
		tc := tls.Client(c, nd.TLS)
		hctx, cancel := context.WithTimeout(ctx, max(setupTimeout, pc.opt.dialTimeout))
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			_ = c.Close()
			if ne, ok := err.(net.Error); errors.Is(err, context.DeadlineExceeded) || ok && ne.Timeout() {
				// A plaintext server waits for a command and never
				// answers the client's hello.
				return fmt.Errorf("TLS handshake (server name %s): %w (does the node speak TLS? a plaintext server never answers the handshake)", nd.TLS.ServerName, err)
			}
			return fmt.Errorf("TLS handshake (server name %s): %w", nd.TLS.ServerName, err)
		}
		c = tc
	}
	pc.c = c
	fc := &firstByteConn{Conn: c}
	err = nodeaddr.Setup(fc, *nd, "", setupScripts, time.Now().Add(setupTimeout))
	if err == nil {
		return nil
	}
	pc.close()
	switch {
	case fc.n > 0 && !isRESPType(fc.first):
		return fmt.Errorf("%w: %w", errNotRedis, err)
	case errors.Is(err, mux.ErrAuth) && nd.Password == "":
		return fmt.Errorf("%w: %w", errAuthRequired, err)
	case errors.Is(err, mux.ErrAuth):
		return fmt.Errorf("%w: %w", errAuth, err)
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return err
	}
	return fmt.Errorf("%w: %w", errServerReply, err)
}

// firstByteConn remembers the first byte read from its connection (during
// the set-up only: the connection is used unwrapped afterwards).
type firstByteConn struct {
	net.Conn
	first byte
	n     int // bytes read so far
}

func (c *firstByteConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if c.n == 0 && n > 0 {
		c.first = b[0]
	}
	c.n += n
	return n, err
}

// isRESPType reports whether b begins a RESP2 or RESP3 reply.
func isRESPType(b byte) bool {
	return strings.IndexByte("+-:$*_,#!=(%~>|", b) >= 0
}

// setupScripts are the scripts every plain connection loads, the ones
// redlock's mux client loads.
var setupScripts = func() []nodeaddr.Script {
	var out []nodeaddr.Script
	for _, s := range redlock.MuxScripts() {
		out = append(out, nodeaddr.Script{Text: s.Text, SHA: s.SHA})
	}
	return out
}()

// do writes cmd and reads its reply within the per-node timeout, dialling
// first if the connection is closed. The reply is valid until the next call.
func (pc *plainConn) do(ctx context.Context, cmd []byte) (resp.Reply, error) {
	if pc.c == nil {
		if err := pc.connect(ctx, pc.opt.timeout); err != nil {
			return resp.Reply{}, err
		}
	}
	deadline := time.Now().Add(pc.opt.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := pc.c.SetDeadline(deadline); err != nil {
		pc.close()
		return resp.Reply{}, err
	}
	if _, err := pc.c.Write(cmd); err != nil {
		pc.close()
		return resp.Reply{}, err
	}
	r, err := pc.readReply()
	if err != nil {
		pc.close()
		return resp.Reply{}, err
	}
	return r, nil
}

// readReply parses one reply from the read buffer, reading more as needed.
func (pc *plainConn) readReply() (resp.Reply, error) {
	for {
		if pc.w > pc.r {
			r, n, err := pc.p.Parse(pc.rbuf[pc.r:pc.w])
			if err == nil {
				pc.r += n
				if pc.r == pc.w {
					pc.r, pc.w = 0, 0
				}
				return r, nil
			}
			if err != resp.ErrIncomplete {
				return resp.Reply{}, err
			}
		}
		if pc.r > 0 {
			pc.w = copy(pc.rbuf, pc.rbuf[pc.r:pc.w])
			pc.r = 0
		}
		if pc.w == len(pc.rbuf) {
			if len(pc.rbuf) >= maxReadBuf {
				return resp.Reply{}, errReplyTooBig
			}
			nb := make([]byte, 2*len(pc.rbuf))
			copy(nb, pc.rbuf[:pc.w])
			pc.rbuf = nb
		}
		n, err := pc.c.Read(pc.rbuf[pc.w:])
		pc.w += n
		if err != nil && n == 0 {
			if err == io.EOF {
				return resp.Reply{}, io.ErrUnexpectedEOF
			}
			return resp.Reply{}, err
		}
	}
}

// Error kinds counted in reports.
const (
	kindTimeout   = "timeout"   // no reply within the per-node timeout / deadline
	kindConn      = "conn"      // dial failure, reset, EOF, node down
	kindServer    = "server"    // an error reply
	kindProtocol  = "protocol"  // a malformed reply
	kindNoQuorum  = "no_quorum" // quorum out of reach because of node failures
	kindValidity  = "validity"  // quorum reached too late
	kindAuth      = "auth"      // AUTH refused
	kindCancelled = "cancelled" // the run ended while the operation was in flight
	kindFailed    = "failed"    // a node failed; the client does not say how (mux acquire)
	kindPending   = "pending"   // no reply yet when a failed attempt's outcome was decided (mux: timed out or not awaited)
	kindOther     = "other"
)

// classify names the kind of an error for the report.
func classify(err error) string {
	var ne net.Error
	switch {
	case err == nil:
		return ""
	case errors.Is(err, errNoQuorum):
		return kindNoQuorum
	case errors.Is(err, errValidity):
		return kindValidity
	case errors.Is(err, errAuth), errors.Is(err, errAuthRequired), errors.Is(err, mux.ErrAuth):
		return kindAuth
	case errors.Is(err, errServerReply):
		return kindServer
	case errors.Is(err, resp.ErrProtocol), errors.Is(err, errReplyTooBig):
		return kindProtocol
	case errors.Is(err, context.Canceled):
		return kindCancelled
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return kindTimeout
	case errors.As(err, &ne), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		return kindConn
	}
	if k := classifyMux(err); k != "" {
		return k
	}
	return kindOther
}
