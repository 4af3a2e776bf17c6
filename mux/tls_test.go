package mux

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redmux/redmux/internal/nodeaddr"
	"github.com/redmux/redmux/internal/redisproc"
	"github.com/redmux/redmux/internal/redisproc/redistest"
	"github.com/redmux/redmux/resp"
)

// These tests run real redis-servers that speak TLS only (--tls-port), with
// a CA and certificates made for each test (no files committed). A
// redis-server built without TLS skips them loudly, or fails them under
// REDMUX_REQUIRE_REDIS.

func tlsConfig(t testing.TB, files *redisproc.TLS) *tls.Config {
	t.Helper()
	pool, err := nodeaddr.LoadCertPool(files.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{RootCAs: pool}
}

func rediss(addr string, query ...string) string {
	u := "rediss://" + addr
	if len(query) > 0 {
		u += "?" + strings.Join(query, "&")
	}
	return u
}

// checkAllDown runs one PING broadcast and checks that every node failed
// at once with a node-down error wrapping want, in one line that names the
// node and says why (reason), with no password in it.
func checkAllDown(t *testing.T, c *Client, want error, reason, password string) {
	t.Helper()
	b := c.NewBatch()
	b.Broadcast(resp.AppendCommand(nil, "PING"))
	out, err := c.Do(context.Background(), b, Policy{})
	if err != nil {
		t.Fatal(err)
	}
	if out.Failures != c.N() {
		t.Fatalf("want every node failed: %+v", out)
	}
	for i := 0; i < c.N(); i++ {
		err := b.Err(i)
		if !errors.Is(err, ErrNodeDown) || !errors.Is(err, want) {
			t.Fatalf("node %d: want node down with %v, got %v", i, want, err)
		}
		msg := err.Error()
		if strings.Contains(msg, "\n") {
			t.Errorf("node %d: error is not one line: %q", i, msg)
		}
		if !strings.Contains(msg, "node "+strconv.Itoa(i)+" (") || !strings.Contains(msg, reason) {
			t.Errorf("node %d: error %q does not name the node and %q", i, msg, reason)
		}
		if password != "" && strings.Contains(msg, password) {
			t.Fatalf("password in error: %q", msg)
		}
		if !errors.Is(c.NodeErr(i), want) {
			t.Errorf("NodeErr(%d) = %v", i, c.NodeErr(i))
		}
	}
	t.Logf("node error: %v", b.Err(0))
}

func TestRealTLSHandshake(t *testing.T) {
	files := redistest.Certs(t, redisproc.CertOptions{})
	srv := redistest.StartN(t, 3, redistest.Options{TLS: files})
	t.Run("ConfigTLS", func(t *testing.T) {
		c := newTestClient(t, redistest.Addrs(srv), func(cfg *Config) { cfg.TLS = tlsConfig(t, files) })
		if _, ok := c.drv.(*netDriver); !ok {
			t.Fatalf("a TLS client runs on %T, want the net.Conn driver", c.drv)
		}
		runCore(t, c)
	})
	t.Run("URL", func(t *testing.T) {
		var addrs []string
		for _, s := range srv {
			addrs = append(addrs, rediss(s.Addr, "cacert="+files.CAFile, "min_version=1.3"))
		}
		c := newTestClient(t, addrs, nil)
		testAllReplies(t, c)
		for i, a := range c.Addrs() {
			if a != "rediss://"+srv[i].Addr {
				t.Errorf("Addrs()[%d] = %q", i, a)
			}
		}
	})
	t.Run("Localhost", func(t *testing.T) {
		// The certificate names localhost too; ServerName comes from the host.
		c := newTestClient(t, []string{rediss("localhost:"+strconv.Itoa(srv[0].Port), "cacert="+files.CAFile)}, nil)
		testAllReplies(t, c)
	})
	t.Run("PlaintextToTLSPort", func(t *testing.T) {
		c := newTestClient(t, redistest.Addrs(srv), func(cfg *Config) { cfg.DialTimeout = 300 * time.Millisecond })
		b := c.NewBatch()
		b.Broadcast(resp.AppendCommand(nil, "PING"))
		out, err := c.Do(context.Background(), b, Policy{})
		if err != nil || out.Failures != c.N() {
			t.Fatalf("plaintext to a TLS port must fail: %+v %v", out, err)
		}
	})
}

func TestRealTLSWrongCA(t *testing.T) {
	files := redistest.Certs(t, redisproc.CertOptions{})
	other := redistest.Certs(t, redisproc.CertOptions{})
	srv := redistest.StartN(t, 3, redistest.Options{TLS: files})
	c := newTestClient(t, redistest.Addrs(srv), func(cfg *Config) { cfg.TLS = tlsConfig(t, other) })
	checkAllDown(t, c, ErrTLS, "certificate signed by unknown authority", "")
	var cv *tls.CertificateVerificationError
	if !errors.As(c.NodeErr(0), &cv) {
		t.Fatalf("NodeErr does not wrap *tls.CertificateVerificationError: %v", c.NodeErr(0))
	}
	var ua x509.UnknownAuthorityError
	if !errors.As(c.NodeErr(0), &ua) {
		t.Fatalf("NodeErr does not wrap x509.UnknownAuthorityError: %v", c.NodeErr(0))
	}

	// Skipping verification is possible, but only when asked for.
	var addrs []string
	for _, s := range srv {
		addrs = append(addrs, rediss(s.Addr, "cacert="+other.CAFile, "skip_verify=true"))
	}
	testAllReplies(t, newTestClient(t, addrs, nil))
}

func TestRealTLSWrongName(t *testing.T) {
	files := redistest.Certs(t, redisproc.CertOptions{})
	srv := redistest.StartN(t, 2, redistest.Options{TLS: files})
	var addrs []string
	for _, s := range srv {
		addrs = append(addrs, rediss(s.Addr, "cacert="+files.CAFile, "sni=redis.example.com"))
	}
	c := newTestClient(t, addrs, nil)
	checkAllDown(t, c, ErrTLS, "redis.example.com", "")
	var hn x509.HostnameError
	if !errors.As(c.NodeErr(0), &hn) {
		t.Fatalf("NodeErr does not wrap x509.HostnameError: %v", c.NodeErr(0))
	}
}

func TestRealTLSExpired(t *testing.T) {
	files := redistest.Certs(t, redisproc.CertOptions{ServerExpired: true})
	srv := redistest.StartN(t, 2, redistest.Options{TLS: files})
	c := newTestClient(t, redistest.Addrs(srv), func(cfg *Config) { cfg.TLS = tlsConfig(t, files) })
	checkAllDown(t, c, ErrTLS, "expired", "")
	var ci x509.CertificateInvalidError
	if !errors.As(c.NodeErr(0), &ci) || ci.Reason != x509.Expired {
		t.Fatalf("NodeErr does not wrap an x509 Expired error: %v", c.NodeErr(0))
	}
}

func TestRealTLSClientCert(t *testing.T) {
	files := redistest.Certs(t, redisproc.CertOptions{})
	files.AuthClients = true
	srv := redistest.StartN(t, 3, redistest.Options{TLS: files})
	for _, v := range []struct {
		name string
		max  uint16
	}{{"TLS1.3", 0}, {"TLS1.2", tls.VersionTLS12}} {
		t.Run(v.name, func(t *testing.T) {
			// No client certificate: TLS 1.2 refuses it in the handshake,
			// TLS 1.3 with an alert the set-up reads.
			c := newTestClient(t, redistest.Addrs(srv), func(cfg *Config) {
				cfg.TLS = tlsConfig(t, files)
				cfg.TLS.MaxVersion = v.max
			})
			checkAllDown(t, c, ErrTLS, "asked for a client certificate and none is configured", "")
		})
	}
	var addrs []string
	for _, s := range srv {
		addrs = append(addrs, rediss(s.Addr, "cacert="+files.CAFile, "cert="+files.ClientCertFile, "key="+files.ClientKeyFile))
	}
	testAllReplies(t, newTestClient(t, addrs, nil))
}

func TestRealTLSAuth(t *testing.T) {
	const pw = "tls-s3cret/pass@word"
	files := redistest.Certs(t, redisproc.CertOptions{})
	srv := redistest.StartN(t, 3, redistest.Options{TLS: files, Password: pw})
	url := func(s *redisproc.Server, pass string) string {
		return "rediss://:" + strings.NewReplacer("/", "%2F", "@", "%40").Replace(pass) + "@" + s.Addr + "/2?cacert=" + files.CAFile
	}
	var good, bad []string
	for _, s := range srv {
		good = append(good, url(s, pw))
		bad = append(bad, url(s, "wrong-"+pw))
	}
	c := newTestClient(t, good, nil)
	testAllReplies(t, c)
	for i, a := range c.Addrs() {
		if want := "rediss://:***@" + srv[i].Addr + "/2"; a != want {
			t.Errorf("Addrs()[%d] = %q, want %q", i, a, want)
		}
	}
	// The URL's /2 selected db 2.
	key := uniqueKey("tlsdb")
	broadcast(t, c, Policy{}, "SET", key, "1")
	c0 := newTestClient(t, redistest.Addrs(srv), func(cfg *Config) { cfg.TLS = tlsConfig(t, files); cfg.Password = pw })
	b, _ := broadcast(t, c0, Policy{}, "EXISTS", key)
	for i := 0; i < c0.N(); i++ {
		if r, err := b.Last(i); err != nil || r.N != 0 {
			t.Fatalf("node %d: key visible in db 0: %v %v", i, r, err)
		}
	}

	wrong := newTestClient(t, bad, nil)
	checkAllDown(t, wrong, ErrAuth, "AUTH failed", pw)
	if errors.Is(wrong.NodeErr(0), ErrTLS) {
		t.Fatalf("a refused AUTH is not a TLS failure: %v", wrong.NodeErr(0))
	}
	none := newTestClient(t, redistest.Addrs(srv), func(cfg *Config) { cfg.TLS = tlsConfig(t, files) })
	checkAllDown(t, none, ErrAuth, "NOAUTH", pw)
}

// TestRealTLSRestart stops a TLS node, checks that calls fail fast while
// it is away, restarts it on the same port and waits (bounded) for the
// supervisor's redial over TLS.
func TestRealTLSRestart(t *testing.T) {
	files := redistest.Certs(t, redisproc.CertOptions{})
	srv := redistest.StartN(t, 3, redistest.Options{TLS: files})
	c := newTestClient(t, redistest.Addrs(srv), func(cfg *Config) { cfg.TLS = tlsConfig(t, files) })
	testAllReplies(t, c)

	port := srv[1].Port
	srv[1].Stop()
	waitNodeDown(t, c, 1)
	b, out := broadcast(t, c, Policy{}, "PING")
	if out.Successes != 2 || !errors.Is(b.Err(1), ErrNodeDown) {
		t.Fatalf("with node 1 away: %+v, node 1: %v", out, b.Err(1))
	}
	redistest.Start(t, redistest.Options{TLS: files, Port: port})
	waitAllOK(t, c, 10*time.Second)
	testAllReplies(t, c)
}

// TestRealTLSFullSocket fills a paused TLS node's socket with large
// commands (the writes that do not fit are spilled under the TLS layer and
// flushed in the background, and callers keep their deadlines), then
// resumes it: the connection drains, every owed reply is skipped, and
// calls succeed again on the same connection.
func TestRealTLSFullSocket(t *testing.T) {
	files := redistest.Certs(t, redisproc.CertOptions{})
	srv := redistest.StartN(t, 1, redistest.Options{TLS: files})
	c := newTestClient(t, redistest.Addrs(srv), func(cfg *Config) {
		cfg.TLS = tlsConfig(t, files)
		cfg.Conns = 1
		cfg.HardTimeout = 30 * time.Second // the pause must not replace the connection
	})
	testAllReplies(t, c)
	short := shortWrites.Load()
	val := strings.Repeat("x", 256<<10)
	_ = srv[0].Pause()
	resumed := false
	defer func() {
		if !resumed {
			_ = srv[0].Resume()
		}
	}()
	b := c.NewBatch()
	for i := 0; i < 200 && shortWrites.Load() == short; i++ {
		b.Reset()
		b.Broadcast(resp.AppendCommand(b.Scratch(), "SET", uniqueKey("big"), val))
		start := time.Now()
		out, err := c.Do(context.Background(), b, Policy{Timeout: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if out.Successes != 0 {
			t.Fatalf("a paused node answered: %+v", out)
		}
		// Functional bound: the node is paused, so a blocked writer
		// would wait for ever; the call's deadline is 20ms.
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("a call on a full socket took %v: the writer blocked", d)
		}
	}
	if shortWrites.Load() == short {
		t.Fatal("200 large writes to a paused node never found the socket full")
	}
	_ = srv[0].Resume()
	resumed = true
	waitAllOK(t, c, 20*time.Second)
	testAllReplies(t, c)
}

// waitNodeDown sends PINGs (bounded: 5s) until node i is seen down on all
// of its connections: NodeUp goes false when the first one breaks, and a
// PING can still reach another connection whose end of file has not been
// read yet (it fails with ErrConnBroken, not ErrNodeDown).
func waitNodeDown(t *testing.T, c *Client, i int) {
	t.Helper()
	end := time.Now().Add(5 * time.Second)
	for {
		b := c.NewBatch()
		b.Broadcast(resp.AppendCommand(nil, "PING"))
		_, _ = c.Do(context.Background(), b, Policy{})
		if !c.NodeUp(i) && errors.Is(b.Err(i), ErrNodeDown) {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("node %d not down on every connection 5s after its server stopped: up %v, last error %v", i, c.NodeUp(i), b.Err(i))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestTLSHandshakeBoundedByDialTimeout: a node that accepts TCP and never
// answers the TLS handshake is down after DialTimeout with a TLS error
// naming the timeout; New does not wait longer, and calls fail at once.
func TestTLSHandshakeBoundedByDialTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stop, exited := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(stop); _ = ln.Close(); <-exited })
	go func() {
		defer close(exited)
		var held []net.Conn
		defer func() {
			for _, c := range held {
				_ = c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c) // read nothing, answer nothing
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	start := time.Now()
	c := newTestClient(t, []string{"rediss://" + ln.Addr().String()}, func(cfg *Config) {
		cfg.DialTimeout = 200 * time.Millisecond
		cfg.ReconnectMin, cfg.ReconnectMax = time.Second, time.Second
	})
	// Functional bound: the 200ms dial must not wait for anything longer.
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("New took %v with DialTimeout 200ms", d)
	}
	checkAllDown(t, c, ErrTLS, "no handshake within DialTimeout (200ms)", "")
}

// TestRealTLSCloseDuringFlush closes a client while a spilled TLS write
// is being flushed to a paused node: when Close returns, the flush (and
// any writer it would resume) has ended, as Close promises: no goroutine
// of the client remains.
func TestRealTLSCloseDuringFlush(t *testing.T) {
	files := redistest.Certs(t, redisproc.CertOptions{})
	srv := redistest.StartN(t, 1, redistest.Options{TLS: files})
	c, err := New(Config{Addrs: redistest.Addrs(srv), TLS: tlsConfig(t, files), Conns: 1, Timeout: time.Second, HardTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	short := shortWrites.Load()
	val := strings.Repeat("x", 256<<10)
	_ = srv[0].Pause()
	defer func() { _ = srv[0].Resume() }()
	b := c.NewBatch()
	for i := 0; i < 200 && shortWrites.Load() == short; i++ {
		b.Reset()
		b.Broadcast(resp.AppendCommand(b.Scratch(), "SET", uniqueKey("big"), val))
		if _, err := c.Do(context.Background(), b, Policy{Timeout: 20 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
	}
	if shortWrites.Load() == short {
		t.Fatal("200 large writes to a paused node never found the socket full")
	}
	c.Close()
	buf := make([]byte, 1<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	for _, f := range []string{"(*spillConn).flush", "(*pconn).writable", "(*pconn).readable"} {
		if strings.Contains(stacks, f) {
			t.Fatalf("%s still runs after Close returned:\n%s", f, stacks)
		}
	}
}
