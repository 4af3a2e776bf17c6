package mux

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"
)

// TLS runs on the net.Conn transport: a *tls.Conn is a net.Conn, Go's TLS
// stack needs blocking reads and writes, and the record layer costs far
// more than the difference between the two transports (measured in
// results/tls). A client with any TLS node therefore uses the net.Conn
// driver for all its connections (driver_linux.go, driver_other.go).
//
// One difference from a plaintext net.Conn: a *tls.Conn whose write timed
// out is broken for good, so the plaintext link's trick (a 2ms write
// deadline, then a short write the engine resumes later) cannot be played
// on it. The deadline is played one level down instead, on the TCP
// connection under the TLS one (spillConn): a record that does not fit
// into the socket within the slice is kept whole (spilled) and written by
// a background flush, and the TLS layer sees a complete write. While a
// flush runs, the link takes nothing new (a zero-length write: the engine
// keeps its queue, bounded by MaxQueuedBytes, and resumes when the flush
// ends), so the spill holds at most one write's records.

// tlsError is a failed TLS handshake (or a TLS alert the server sent
// during the set-up, as a TLS 1.3 server does for a missing client
// certificate). It wraps ErrTLS and the crypto/tls error.
type tlsError struct {
	server string // the name the certificate was checked against
	err    error
	noCert bool // the server asked for a client certificate and got none
}

func (e *tlsError) Error() string {
	s := "TLS handshake failed (server name " + e.server + "): " + e.err.Error()
	if e.noCert {
		s += "; the server asked for a client certificate and none is configured (cert= and key=, or tls.Config.Certificates)"
	}
	return s
}

func (e *tlsError) Unwrap() []error { return []error{ErrTLS, e.err} }

// dialTLS runs the TLS handshake on nc, a TCP connection to node, then
// the set-up pipeline over TLS, all bounded by deadline (DialTimeout) and
// aborted by Close. It runs in the background (New's dials, the
// supervisor), never on a caller's path.
func (d *netDriver) dialTLS(node int, nc net.Conn, deadline time.Time) (link, error) {
	c := d.c
	ns := &c.cfg.nodes[node]
	sc := &spillConn{Conn: nc, d: d}
	cfg, noCert := watchClientCert(ns.tls)
	tc := tls.Client(sc, cfg)
	_ = tc.SetDeadline(deadline)
	ctx, cancel := context.WithDeadline(c.life, deadline)
	err := tc.HandshakeContext(ctx)
	cancel()
	if err != nil {
		_ = nc.Close()
		if c.life.Err() != nil {
			return nil, ErrClosed
		}
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
			err = fmt.Errorf("no handshake within DialTimeout (%v): %w", c.cfg.DialTimeout, err)
		}
		return nil, &tlsError{server: cfg.ServerName, err: err, noCert: *noCert}
	}
	rw := &tlsRW{netRW: netRW{tc}}
	rest, err := runSetup(rw, c.cfg, node, 0, deadline) // no TLS to cluster nodes: shard 0
	if err != nil {
		_ = nc.Close()
		// A TLS 1.3 server checks the client's certificate after the
		// client's handshake is done: a refusal arrives as an alert (or,
		// when the server closed first, a reset) during the set-up.
		if isTLSAlert(rw.err) || (rw.err != nil && *noCert) {
			return nil, &tlsError{server: cfg.ServerName, err: rw.err, noCert: *noCert}
		}
		return nil, err
	}
	_ = tc.SetDeadline(time.Time{})
	sc.mu.Lock()
	sc.sliced = true
	sc.mu.Unlock()
	return &netLink{d: d, nc: tc, sc: sc, pre: rest}, nil
}

// watchClientCert returns a copy of cfg for one handshake that records
// whether the server asked for a client certificate and none was sent.
// It picks a certificate as crypto/tls does by default (the first of
// Certificates the server accepts); a GetClientCertificate of the caller
// is kept as it is.
func watchClientCert(cfg *tls.Config) (*tls.Config, *bool) {
	noCert := new(bool)
	if cfg.GetClientCertificate != nil {
		return cfg, noCert
	}
	c := cfg.Clone()
	certs := c.Certificates
	c.GetClientCertificate = func(cri *tls.CertificateRequestInfo) (*tls.Certificate, error) {
		for i := range certs {
			if cri.SupportsCertificate(&certs[i]) == nil {
				return &certs[i], nil
			}
		}
		*noCert = true
		return new(tls.Certificate), nil
	}
	return c, noCert
}

// isTLSAlert reports whether err is an alert the peer sent (crypto/tls
// returns those as a *net.OpError with Op "remote error").
func isTLSAlert(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "remote error"
}

// tlsRW is the set-up's I/O over TLS; it keeps the last I/O error, so a
// TLS alert that ends the set-up is reported as a TLS failure.
type tlsRW struct {
	netRW
	err error
}

func (r *tlsRW) write(b []byte, deadline time.Time) error {
	err := r.netRW.write(b, deadline)
	if err != nil {
		r.err = err
	}
	return err
}

func (r *tlsRW) read(b []byte, deadline time.Time) (int, error) {
	n, err := r.netRW.read(b, deadline)
	if err != nil {
		r.err = err
	}
	return n, err
}

// spillConn is the TCP connection under a TLS link. Until sliced is set
// (handshake and set-up) it is the plain connection, with the dial's
// deadline. Then every write gets netWriteSlice: what the socket has not
// taken by then is spilled and written by a flush goroutine, so the TLS
// layer above never sees a timeout (which would break it for good).
type spillConn struct {
	net.Conn

	mu       sync.Mutex
	sliced   bool
	spill    []byte
	flushing bool
	resume   bool   // the engine waits for the flush (wantWrite(true))
	cn       *pconn // the link's connection, set by start
	err      error  // the flush failed: the connection is broken
	d        *netDriver
}

// Write is called by the TLS layer with whole records, one caller at a
// time (the TLS layer's write lock).
func (s *spillConn) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.sliced {
		return s.Conn.Write(b)
	}
	if s.err != nil {
		return 0, s.err
	}
	if s.flushing {
		s.spill = append(s.spill, b...)
		return len(b), nil
	}
	_ = s.Conn.SetWriteDeadline(time.Now().Add(netWriteSlice))
	n, err := s.Conn.Write(b)
	if err != nil {
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			return n, err
		}
		shortWrites.Add(1)
		s.spill = append(s.spill[:0], b[n:]...)
		s.flushing = true
		if !s.d.spawn(s.flush) {
			s.flushing = false
			return n, ErrClosed
		}
	}
	return len(b), nil
}

// flush writes the spill with no deadline (a connection that stays full
// is replaced by the HardTimeout sweep, whose abort closes the socket and
// ends this write), then resumes the engine's writer if it waits.
func (s *spillConn) flush() {
	var buf []byte
	for {
		s.mu.Lock()
		if len(s.spill) == 0 || s.err != nil {
			s.flushing = false
			cn, resume, err := s.cn, s.resume, s.err
			s.resume = false
			s.mu.Unlock()
			if err != nil && cn != nil {
				cn.abort(ErrConnBroken, err)
			} else if resume && cn != nil {
				cn.writable()
			}
			return
		}
		buf, s.spill = s.spill, buf[:0]
		s.mu.Unlock()
		_ = s.Conn.SetWriteDeadline(time.Time{})
		if _, err := s.Conn.Write(buf); err != nil {
			s.mu.Lock()
			s.err = err
			s.mu.Unlock()
		}
	}
}

// writeTLS is a TLS link's write: nothing while a flush runs (the engine
// keeps its queue and waits through wantWrite), else one TLS write, which
// the spillConn below completes.
func (s *spillConn) writeTLS(tc net.Conn, p []byte) (int, error) {
	s.mu.Lock()
	err, busy := s.err, s.flushing
	s.mu.Unlock()
	if err != nil {
		return 0, err
	}
	if busy {
		return 0, nil
	}
	return tc.Write(p)
}

// wantWrite asks for the engine's writer to be resumed once the flush has
// ended (at once, from another goroutine, if it already has). Called with
// cn.mu held, so cn.writable never runs here.
func (s *spillConn) wantWrite(cn *pconn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.flushing {
		s.resume = true
		return
	}
	s.d.spawn(cn.writable)
}
