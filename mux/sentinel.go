package mux

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redmux/redmux/resp"
)

// This file holds what a Sentinel-managed node (a redis-sentinel:// URL,
// internal/nodeaddr/sentinel.go) adds to a dial: the sentinels are asked which process
// is the primary, that process is dialled and must answer ROLE "master"
// in its set-up pipeline. It runs only where mux dials (New and the
// supervisor), never on a caller's path; the watcher (watchSentinel)
// follows +switch-master in the background.

// ErrSentinel is wrapped by the cause of a Sentinel-managed node that
// could not be dialled because no sentinel named a primary that answered
// as one: an unknown master name, sentinels that could not be reached or
// refused AUTH, a named address that could not be dialled or answered
// ROLE as a replica. The error names every sentinel asked and what came
// of it.
var ErrSentinel = errors.New("mux: no primary from the sentinels")

// Causes of a Sentinel node's connection replaced in the background.
var (
	errDemoted = errors.New("the primary answered READONLY (it is a replica now): connection replaced, the sentinels are asked again")
	errLoading = errors.New("the primary answered LOADING (it is loading its data set): connection replaced, the sentinels are asked again")
	// the same on a node of another kind: the node is set up again
	errReadOnly     = errors.New("the node answered READONLY (it is a replica now): connection replaced, the node set up again")
	errLoadingPlain = errors.New("the node answered LOADING (it is loading its data set): connection replaced, the node set up again")
	errSwitched     = errors.New("a sentinel announced +switch-master: connection replaced, the sentinels are asked again")
	errNotMaster    = errors.New("not a primary")
)

// sentinelError is a failed resolution: what every sentinel asked said.
type sentinelError struct {
	master string
	tries  []error
}

func (e *sentinelError) Error() string {
	var b strings.Builder
	b.WriteString("no primary for sentinelMasterId " + strconv.Quote(e.master) + " from " + strconv.Itoa(len(e.tries)) + " sentinel(s)")
	for _, t := range e.tries {
		b.WriteString("; " + t.Error())
	}
	return b.String()
}

func (e *sentinelError) Unwrap() []error { return append([]error{ErrSentinel}, e.tries...) }

// dialViaSentinels dials node i's primary: each sentinel in turn (from the
// last one that worked) is asked for the primary's address
// (SENTINEL GET-MASTER-ADDR-BY-NAME, bounded by DialTimeout), and dial
// connects to it and runs the set-up (ROLE must say master), bounded by
// DialTimeout again; then a majority of the sentinels must name that
// process, asked all at once (bounded by DialTimeout), and no switch may
// have been announced since the dial began (sentinel_confirm.go), or the
// connection is closed (undo) and the next sentinel asked. The first
// primary confirmed wins; an address that already failed in this round is
// not dialled twice. Each sentinel is asked once per call, so a call ends
// within 3 x DialTimeout per sentinel.
func (c *Client) dialViaSentinels(i int, dial func(host string, port int, deadline time.Time) (undo func(), err error)) error {
	ss := c.cfg.nodes[i].sentinel
	n := len(ss.addrs)
	first := int(ss.first.Load())
	se := &sentinelError{master: ss.master}
	failed := map[string]bool{}
	for k := 0; k < n; k++ {
		if c.closed.Load() {
			return ErrClosed
		}
		s := (first + k) % n
		sa := ss.addrs[s]
		host, port, err := c.askSentinel(ss, sa, time.Now().Add(c.cfg.DialTimeout))
		if err != nil {
			if c.closed.Load() {
				return ErrClosed
			}
			se.tries = append(se.tries, fmt.Errorf("sentinel %s: %w", sa, err))
			continue
		}
		hp := net.JoinHostPort(host, strconv.Itoa(port))
		if failed[hp] {
			se.tries = append(se.tries, fmt.Errorf("sentinel %s names %s (failed above)", sa, hp))
			continue
		}
		gen := c.nodes[i].switchGen.Load()
		prevInc := c.nodes[i].inc.Load()
		undo, err := dial(host, port, time.Now().Add(c.cfg.DialTimeout))
		if err == nil {
			// a set-up that began before a switch, or reached a process
			// the sentinels' majority no longer names, is not kept
			learned := c.nodes[i].inc.Load()
			var replicas int
			//mutant:sentinel-role-master-enough
			replicas, err = c.confirmPrimary(ss, hp, time.Now().Add(c.cfg.DialTimeout))
			if err == nil && c.nodes[i].switchGen.Load() != gen {
				err = errSwitchedDuringSetup
			}
			if err == nil {
				ss.first.Store(int32(s))
				c.nodes[i].replicas.Store(int32(replicas))
				c.nodes[i].primary.Store(&hp)
				return nil
			}
			undo()
			c.nodes[i].inc.CompareAndSwap(learned, prevInc) // never the node's incarnation
		}
		if errors.Is(err, ErrClosed) || c.closed.Load() {
			return ErrClosed
		}
		failed[hp] = true
		se.tries = append(se.tries, fmt.Errorf("sentinel %s names %s: %w", sa, hp, err))
	}
	return se
}

// askSentinel asks the sentinel at addr for ss's primary, after AUTH with
// the sentinels' credentials when set.
func (c *Client) askSentinel(ss *sentinelSpec, addr string, deadline time.Time) (string, int, error) {
	sc, err := c.sentinelDial(ss, addr, deadline)
	if err != nil {
		return "", 0, err
	}
	defer sc.close()
	if err := sc.send(deadline, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", ss.master); err != nil {
		return "", 0, err
	}
	rep, err := sc.reply(deadline)
	if err != nil {
		return "", 0, err
	}
	return ss.masterAddr(rep)
}

// masterAddr reads a GET-MASTER-ADDR-BY-NAME reply: [host, port], or a
// null for a name the sentinel does not monitor. A host longer than a
// DNS name may be, or with a space or control character in it, is
// refused; the sentinel's text is quoted cleaned (cleanText).
func (ss *sentinelSpec) masterAddr(rep resp.Reply) (string, int, error) {
	quote := func(s string) string { return cleanText(s, maxQuoted, ss.secrets) }
	switch {
	case rep.IsError():
		return "", 0, errors.New("refused: " + quote(string(rep.Data)) + " (is it a sentinel?)")
	case rep.Null:
		return "", 0, errors.New("does not know sentinelMasterId " + strconv.Quote(ss.master))
	case rep.Type != resp.TypeArray || rep.Len() != 2:
		return "", 0, errors.New("unexpected reply " + quote(rep.String()))
	}
	it := rep.Iter()
	var h, p resp.Reply
	it.Next(&h)
	it.Next(&p)
	port, err := strconv.Atoi(string(p.Data))
	if err != nil || port <= 0 || port > 65535 {
		return "", 0, errors.New("unexpected reply: port " + quote(p.String()))
	}
	if len(h.Data) == 0 || len(h.Data) > 255 || bytes.ContainsFunc(h.Data, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return "", 0, errors.New("unexpected reply: host " + quote(h.String()))
	}
	return string(h.Data), port, nil
}

// checkRole reads the ROLE reply of a Sentinel node's set-up: the
// process must be a primary.
func checkRole(rep resp.Reply, secrets []string) error {
	role := rep.String()
	if rep.Type == resp.TypeArray && rep.Len() > 0 {
		var a resp.Reply
		it := rep.Iter()
		it.Next(&a)
		if bytes.Equal(a.Data, []byte("master")) {
			return nil
		}
		role = string(a.Data)
	}
	role = cleanText(role, maxQuoted, secrets)
	return &setupError{step: "ROLE", text: "the process answers ROLE " + role + ", not master: the sentinel's answer is stale or wrong", io: errNotMaster}
}

// sentinelConn is a plain connection to a sentinel (background only).
type sentinelConn struct {
	nc   net.Conn
	stop func() bool
	p    *resp.Parser
	buf  []byte
	off  int
	max  int // MaxReplyBytes
}

// sentinelDial connects to the sentinel at addr (bounded by deadline,
// aborted by Close) and authenticates with the sentinels' credentials.
func (c *Client) sentinelDial(ss *sentinelSpec, addr string, deadline time.Time) (*sentinelConn, error) {
	return c.plainDial(addr, ss.username, ss.password, deadline)
}

// plainDial connects to addr (bounded by deadline, aborted by Close) for
// a background exchange (a sentinel's, a cluster member's slot map) and
// authenticates with username and password when set.
func (c *Client) plainDial(addr, username, password string, deadline time.Time) (*sentinelConn, error) {
	ctx, cancel := context.WithDeadline(c.life, deadline)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, errors.New(strings.TrimPrefix(err.Error(), "dial tcp "+addr+": "))
	}
	sc := &sentinelConn{nc: nc, p: &c.cfg.Parser, buf: make([]byte, 0, 512), max: c.cfg.MaxReplyBytes}
	sc.stop = context.AfterFunc(c.life, func() { _ = nc.Close() })
	if password != "" {
		args := []string{"AUTH", password}
		if username != "" {
			args = []string{"AUTH", username, password}
		}
		if err := sc.send(deadline, args...); err != nil {
			sc.close()
			return nil, err
		}
		rep, err := sc.reply(deadline)
		if err == nil && rep.IsError() {
			err = &setupError{step: "AUTH", text: cleanText(string(rep.Data), maxQuoted, []string{password}), kind: ErrAuth}
		}
		if err != nil {
			sc.close()
			return nil, err
		}
	}
	return sc, nil
}

func (sc *sentinelConn) close() {
	sc.stop()
	_ = sc.nc.Close()
}

func (sc *sentinelConn) send(deadline time.Time, args ...string) error {
	_ = sc.nc.SetWriteDeadline(deadline)
	_, err := sc.nc.Write(resp.AppendCommand(nil, args...))
	return err
}

// reply reads one reply (valid until the next call), by deadline (zero:
// none), of at most MaxReplyBytes (a slot map's too).
func (sc *sentinelConn) reply(deadline time.Time) (resp.Reply, error) {
	_ = sc.nc.SetReadDeadline(deadline)
	if sc.off > 0 {
		sc.buf = sc.buf[:copy(sc.buf, sc.buf[sc.off:])]
		sc.off = 0
	}
	for {
		rep, n, err := sc.p.Parse(sc.buf)
		if err == nil {
			sc.off = n
			return rep, nil
		}
		if err != resp.ErrIncomplete {
			return resp.Reply{}, err
		}
		if len(sc.buf) == cap(sc.buf) {
			if len(sc.buf) >= sc.max {
				return resp.Reply{}, fmt.Errorf("reply larger than MaxReplyBytes (%d)", sc.max)
			}
			grow := min(len(sc.buf), sc.max-len(sc.buf))
			sc.buf = append(sc.buf, make([]byte, grow)...)[:len(sc.buf)]
		}
		k, err := sc.nc.Read(sc.buf[len(sc.buf):cap(sc.buf)])
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
				return resp.Reply{}, errNoReply
			}
			return resp.Reply{}, err
		}
		sc.buf = sc.buf[:len(sc.buf)+k]
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Primary returns the address (host:port) of the primary that node i's
// newest connection was set up with, for a Sentinel-managed node, and ""
// for any other node or before a first set-up.
func (c *Client) Primary(i int) string {
	if i < 0 || i >= c.n {
		return ""
	}
	if p := c.nodes[i].primary.Load(); p != nil {
		return *p
	}
	return ""
}

// demotedReply tells whether the error frame f (a reply of any node)
// says its process is no longer a writable primary: READONLY (it was made
// a replica) or LOADING (it restarted and loads its data set), and the
// cause to break the connection with; the set-up that follows learns the
// process again (its incarnation and role; a Sentinel node's, from the
// sentinels). Cold path: error replies only.
func demotedReply(f []byte, sentinel bool) error {
	switch {
	case bytes.HasPrefix(f, []byte("-READONLY")) && sentinel:
		return errDemoted
	case bytes.HasPrefix(f, []byte("-READONLY")):
		return errReadOnly
	case bytes.HasPrefix(f, []byte("-LOADING")) && sentinel:
		return errLoading
	case bytes.HasPrefix(f, []byte("-LOADING")):
		return errLoadingPlain
	}
	return nil
}

// sentinelWatchOff turns the watcher off for clients made while it is
// set (tests that measure the redial on errors alone).
var sentinelWatchOff atomic.Bool

// watchSentinel follows +switch-master for node i in the background (one
// goroutine per Sentinel node, until Close): it subscribes on one
// sentinel at a time (in turn, after a capped backoff when one fails) and
// replaces the node's connections when the sentinels name another
// primary than the one they were set up with, so that a connection to a
// demoted primary is not kept until its replies say so. It also asks for
// the primary each time it subscribes, so a switch missed while it was
// not subscribed is caught then. Redials stay with the supervisor.
func (c *Client) watchSentinel(i int) {
	defer c.supWG.Done()
	ss := c.cfg.nodes[i].sentinel
	var backoff time.Duration
	for k := int(ss.first.Load()); ; k++ {
		c.watchOne(i, ss, ss.addrs[k%len(ss.addrs)])
		if c.closed.Load() {
			return
		}
		backoff = min(max(2*backoff, c.cfg.ReconnectMin), c.cfg.ReconnectMax)
		t := time.NewTimer(jitter(backoff))
		select {
		case <-c.done:
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// watchOne subscribes to +switch-master on the sentinel at addr and
// handles its messages until the connection ends.
func (c *Client) watchOne(i int, ss *sentinelSpec, addr string) {
	deadline := time.Now().Add(c.cfg.DialTimeout)
	sc, err := c.sentinelDial(ss, addr, deadline)
	if err != nil {
		return
	}
	defer sc.close()
	if err := sc.send(deadline, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", ss.master); err != nil {
		return
	}
	if err := sc.send(deadline, "SUBSCRIBE", "+switch-master"); err != nil {
		return
	}
	rep, err := sc.reply(deadline)
	if err != nil {
		return
	}
	if h, p, err := ss.masterAddr(rep); err == nil {
		// one sentinel's answer: its majority settles it (a lagging one
		// cuts nothing off)
		if hp := net.JoinHostPort(h, strconv.Itoa(p)); !c.majorityNamesCurrent(i, ss, hp, c.cfg.DialTimeout) {
			c.switched(i, hp)
		}
	}
	if rep, err = sc.reply(deadline); err != nil || rep.IsError() {
		return
	}
	// Subscribed: wait for messages; when none came for watchPing, a PING
	// must be answered within pingWait, or the sentinel hangs (SIGSTOP, a
	// partition) and the next one is subscribed to (issue 45).
	pinged := false
	for {
		wait := watchPing
		if pinged {
			wait = min(c.cfg.DialTimeout, pingWait)
		}
		//mutant:watcher-no-liveness
		rep, err := sc.reply(time.Now().Add(wait))
		if err == errNoReply && !pinged {
			if sc.send(time.Now().Add(pingWait), "PING") != nil {
				return
			}
			pinged = true
			continue
		}
		if err != nil {
			return
		}
		pinged = false // anything it says shows it is alive (a PING's reply is ["pong", ""])
		// ["message", "+switch-master", "<name> <old-ip> <old-port> <new-ip> <new-port>"]
		if rep.Type != resp.TypeArray || rep.Len() != 3 {
			continue
		}
		var a resp.Reply
		it := rep.Iter()
		it.Next(&a)
		if !bytes.Equal(a.Data, []byte("message")) {
			continue
		}
		it.Next(&a)
		it.Next(&a)
		f := strings.Fields(string(a.Data))
		if len(f) == 5 && f[0] == ss.master {
			c.claimSwitch(i, ss, net.JoinHostPort(f[3], f[4]))
		}
	}
}

// switched replaces node i's connections when primary (host:port, as a
// sentinel names it) is not the one they were set up with, and fails the
// set-ups under way (the switch generation moves on: dialViaSentinels).
func (c *Client) switched(i int, primary string) {
	cur := c.nodes[i].primary.Load()
	if cur != nil && *cur == primary {
		return
	}
	if cur == nil {
		return // not set up yet: the dial asks the sentinels' majority
	}
	c.nodes[i].switchGen.Add(1)
	for _, cn := range c.nodeConns(i) {
		cn.abort(ErrConnBroken, errSwitched)
	}
}
