package mux

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redmux/redmux/fakeserver"
	"github.com/redmux/redmux/internal/nodeaddr"
)

// nodeaddr.Setup (setupConn) runs New's set-up on a connection of the
// caller's: with the right
// password the scripts are loaded and the db selected; a wrong one is
// ErrAuth without the password; a server that answers more than was asked
// is refused.
func TestSetupOnOwnConnection(t *testing.T) {
	const pw = "setup-secret"
	cl := startFake(t, 1, fakeserver.Config{Password: pw})
	script := Script{Text: "return 1", SHA: "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"}
	dial := func() net.Conn {
		c, err := net.Dial("tcp", cl.Addrs()[0])
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	deadline := func() time.Time { return time.Now().Add(5 * time.Second) }

	c := dial()
	a := nodeaddr.Node{Password: pw, DB: 3}
	if err := nodeaddr.Setup(c, a, "", []nodeaddr.Script{{Text: script.Text, SHA: script.SHA}}, deadline()); err != nil {
		t.Fatalf("Setup: %v", err)
	}
	_ = c.SetDeadline(deadline())
	if _, err := c.Write([]byte("*3\r\n$6\r\nSCRIPT\r\n$6\r\nEXISTS\r\n$40\r\n" + script.SHA + "\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	got := ""
	for !strings.HasSuffix(got, "+OK\r\n") {
		n, err := c.Read(buf)
		if err != nil {
			t.Fatalf("reading: %v (so far %q)", err, got)
		}
		got += string(buf[:n])
	}
	if got != "*1\r\n:1\r\n+OK\r\n" {
		t.Fatalf("after Setup: %q, want the script loaded and SET answered", got)
	}
	if _, ok := cl.Nodes[0].Get("k"); ok {
		t.Fatal("the key is in db 0: SELECT 3 was not sent")
	}

	a.Password = "not-" + pw
	err := nodeaddr.Setup(dial(), a, "", nil, deadline())
	if !errors.Is(err, ErrAuth) || strings.Contains(err.Error(), pw) {
		t.Fatalf("wrong password: %v, want ErrAuth without the password", err)
	}
	a.Password = ""
	if err := nodeaddr.Setup(dial(), a, "", nil, deadline()); !errors.Is(err, ErrAuth) {
		t.Fatalf("no password: %v, want ErrAuth (NOAUTH)", err)
	}
}

// A reply nobody asked for after the set-up's own is an error, as it is for
// New's connections.
func TestSetupRefusesStrayReply(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { _ = ln.Close(); <-done })
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 4096)
		_, _ = c.Read(buf)
		_, _ = c.Write([]byte("+OK\r\n+OK\r\n")) // CLIENT SETNAME's, and one more
		_, _ = c.Read(buf)
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = nodeaddr.Setup(c, nodeaddr.Node{}, "", nil, time.Now().Add(5*time.Second))
	if err == nil {
		t.Fatal("a stray reply after the set-up was accepted")
	}
}
