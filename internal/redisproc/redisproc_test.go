package redisproc_test

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/redmux/redmux/internal/redisproc"
	"github.com/redmux/redmux/internal/redisproc/redistest"
)

func TestStartStop(t *testing.T) {
	s := redistest.Start(t, redistest.Options{Password: "s3cret"})
	if s.Port == 6379 {
		t.Fatal("must never use 6379")
	}
	if err := redisproc.Ping(s.Addr, "s3cret", nil); err != nil {
		t.Fatalf("ping: %v", err)
	}
	if err := redisproc.Ping(s.Addr, "", nil); err == nil {
		t.Fatal("ping without password should fail")
	}
	pid := s.Pid()
	s.Stop()
	if err := syscall.Kill(pid, 0); err == nil {
		// The process may linger as a zombie only if not reaped; Wait reaped it.
		t.Fatalf("process %d still exists after Stop", pid)
	}
	if _, err := os.Stat(redisproc.Dir(s)); !os.IsNotExist(err) {
		t.Fatalf("dir %s not removed", redisproc.Dir(s))
	}
}

// TestStartTLS starts a TLS-only server with certificates made for the
// test, checks that it speaks TLS and not plaintext on its port, that a
// client certificate is required when asked, and that it restarts on the
// same port.
func TestStartTLS(t *testing.T) {
	files := redistest.Certs(t, redisproc.CertOptions{})
	files.AuthClients = true
	s := redistest.Start(t, redistest.Options{Password: "s3cret", TLS: files})
	if !s.TLS {
		t.Fatal("Server.TLS not set")
	}
	if err := redisproc.Ping(s.Addr, "s3cret", files); err != nil {
		t.Fatalf("TLS ping: %v", err)
	}
	if err := redisproc.Ping(s.Addr, "s3cret", nil); err == nil {
		t.Fatal("a plaintext PING on the TLS port answered")
	}
	noCert := *files
	noCert.ClientCertFile, noCert.ClientKeyFile = files.CertFile, files.KeyFile // a server-only certificate
	if err := redisproc.Ping(s.Addr, "s3cret", &noCert); err == nil {
		t.Fatal("a client certificate without client-auth usage was accepted")
	}
	port := s.Port
	s.Stop()
	s2 := redistest.Start(t, redistest.Options{Password: "s3cret", TLS: files, Port: port})
	if s2.Port != port {
		t.Fatalf("restart on port %d got %d", port, s2.Port)
	}
	if err := redisproc.Ping(s2.Addr, "s3cret", files); err != nil {
		t.Fatalf("TLS ping after restart: %v", err)
	}
}

// TestSentinelGroupFailover starts a primary, a replica and 3 sentinels,
// pauses the primary (SIGSTOP) and waits for the sentinels to promote the
// replica; the old primary, resumed, becomes the new one's replica.
func TestSentinelGroupFailover(t *testing.T) {
	g := redistest.StartSentinelGroup(t, redistest.SentinelOptions{Password: "data-pw", SentinelPassword: "sent-pw"})
	if len(g.Data) != 2 || len(g.Sentinels) != 3 {
		t.Fatalf("%d data nodes, %d sentinels", len(g.Data), len(g.Sentinels))
	}
	old, err := g.Primary()
	if err != nil || old != g.Data[0] {
		t.Fatalf("primary %v, %v; want the first started", old, err)
	}
	start := time.Now()
	if err := old.Pause(); err != nil {
		t.Fatal(err)
	}
	nw, err := g.WaitFailover(old, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("failover to %s in %v", nw.Addr, time.Since(start).Round(time.Millisecond))
	if err := g.Rejoin(old, nw, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if p, err := g.Primary(); err != nil || p != nw {
		t.Fatalf("after the old primary came back: primary %v, %v; want %s", p, err, nw.Addr)
	}
	if _, err := redisproc.Command(g.Sentinels[0].Addr, "", "PING"); err == nil {
		t.Fatal("a sentinel answered without its password")
	}
}
