package fakeserver

import (
	"net"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestMaxClients (issue 34 R10): past Config.MaxClients a client gets
// Redis's "-ERR max number of clients reached" and is disconnected; once a
// client leaves, a new one is served.
func TestMaxClients(t *testing.T) {
	n := startNode(t, Config{MaxClients: 3})
	var cs []*tconn
	for i := 0; i < 3; i++ {
		c := dial(t, n.Addr())
		eqReply(t, "served", c.do("PING"), pongReply)
		cs = append(cs, c)
	}
	over := dial(t, n.Addr())
	r, err := over.tryRead(5 * time.Second)
	eqReply(t, "over maxclients", r, errReply("ERR max number of clients reached"))
	if err == nil {
		if _, err = over.tryRead(5 * time.Second); err == nil {
			t.Error("the client over maxclients was not disconnected")
		}
	}
	_ = cs[0].c.Close()
	for deadline := time.Now().Add(5 * time.Second); n.Stats().CurrentConn > 2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections after one closed", n.Stats().CurrentConn)
		}
	}
	eqReply(t, "served again", dial(t, n.Addr()).do("PING"), pongReply)
	if info := cs[1].do("INFO", "clients"); !hasPrefix(info, "$") || !containsAll(info, "maxclients:3\r\n") {
		t.Errorf("INFO clients = %q", info)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}

// flakyListener fails every Accept with EMFILE while failing is set.
type flakyListener struct {
	net.Listener
	calls   atomic.Int64
	failing atomic.Bool
}

func (f *flakyListener) Accept() (net.Conn, error) {
	f.calls.Add(1)
	if f.failing.Load() {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return f.Listener.Accept()
}

// TestAcceptErrorBackoff (issue 34 R10): on EMFILE redcon's accept loop
// retried at once, spinning a core (3.0 s of CPU in 5 s) while no client was
// served. Accept errors are now waited out with a backoff, and clients are
// served once they stop; Close still returns promptly.
func TestAcceptErrorBackoff(t *testing.T) {
	n := startNode(t, Config{})
	addr := n.Addr()
	n.Down()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s again: %v", addr, err)
	}
	fl := &flakyListener{Listener: ln}
	fl.failing.Store(true)
	n.ctl.Lock()
	n.serve(fl)
	n.ctl.Unlock()
	time.Sleep(500 * time.Millisecond)
	calls := fl.calls.Load()
	t.Logf("%d accept calls in 500ms of EMFILE", calls)
	if calls > 50 { // 5ms doubling: about 7; spinning: hundreds of thousands
		t.Errorf("%d accept calls in 500ms of EMFILE: the accept loop spins", calls)
	}
	fl.failing.Store(false)
	c := dial(t, addr)
	eqReply(t, "served after the errors stop", c.do("PING"), pongReply)
	fl.failing.Store(true)
	start := time.Now()
	_ = n.Close()
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Close took %v while accept was backing off", d)
	}
}
