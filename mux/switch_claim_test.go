package mux

import (
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redmux/redmux/resp"
)

// claimSentinel is a fake sentinel: it names *primary (GET-MASTER-ADDR-BY-NAME),
// and a client that subscribes to +switch-master gets bogus messages
// naming elsewhere, then it counts the PINGs that show the watcher read
// them all.
type claimSentinel struct {
	ln      net.Listener
	mu      sync.Mutex
	primary string
	claims  int    // +switch-master messages sent to each subscriber
	to      string // the primary they name
	pings   atomic.Int64
	wg      sync.WaitGroup
	conns   []net.Conn
}

func startClaimSentinel(t *testing.T, primary string, claims int, to string) *claimSentinel {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &claimSentinel{ln: ln, primary: primary, claims: claims, to: to}
	s.wg.Add(1)
	go s.serve()
	t.Cleanup(func() {
		_ = ln.Close()
		s.mu.Lock()
		for _, c := range s.conns {
			_ = c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

func (s *claimSentinel) names(primary string) {
	s.mu.Lock()
	s.primary = primary
	s.mu.Unlock()
}

func (s *claimSentinel) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns = append(s.conns, c)
		s.mu.Unlock()
		s.wg.Add(1)
		go s.conn(c)
	}
}

func (s *claimSentinel) conn(c net.Conn) {
	defer s.wg.Done()
	defer c.Close()
	var buf []byte
	tmp := make([]byte, 4096)
	for {
		n, err := c.Read(tmp)
		if err != nil {
			return
		}
		buf = append(buf, tmp[:n]...)
		for {
			_, k, err := resp.Parse(buf)
			if err != nil {
				break
			}
			cmd := strings.ToUpper(string(buf[:k]))
			buf = buf[k:]
			s.mu.Lock()
			primary, claims, to := s.primary, s.claims, s.to
			s.mu.Unlock()
			var out []byte
			switch {
			case strings.Contains(cmd, "GET-MASTER-ADDR-BY-NAME"):
				out = []byte(addrReply(primary))
			case strings.Contains(cmd, "REPLICAS"):
				out = []byte("*0\r\n")
			case strings.Contains(cmd, "SUBSCRIBE"):
				out = append(resp.AppendArrayHeader(nil, 3), resp.AppendBulkString(resp.AppendBulkString(nil, "subscribe"), "+switch-master")...)
				out = append(out, ":1\r\n"...)
				oh, op, _ := net.SplitHostPort(primary)
				nh, np, _ := net.SplitHostPort(to)
				for j := 0; j < claims; j++ {
					out = resp.AppendCommand(out, "message", "+switch-master", "m "+oh+" "+op+" "+nh+" "+np)
				}
			case strings.Contains(cmd, "PING"):
				s.pings.Add(1)
				out = resp.AppendCommand(nil, "pong", "")
			default:
				out = []byte("+OK\r\n")
			}
			if _, err := c.Write(out); err != nil {
				return
			}
		}
	}
}

// One sentinel's +switch-master naming another process, a replica, while
// a majority of the sentinels still name the current primary, cuts nothing
// off (issue 46: 59 bogus messages made 59 reconnections); a switch the
// majority agrees with is followed.
func TestSwitchClaimAsksSentinels(t *testing.T) {
	var accepted atomic.Int64
	primary := startHostile(t, func(h *hostile) {
		h.reply = func(cn *hconn, args [][]byte, out []byte) []byte {
			if cn.n == 0 {
				accepted.Add(1) // a connection's first command
			}
			if string(args[0]) == "ROLE" {
				return []byte("*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n")
			}
			return out
		}
	})
	var promoted atomic.Bool // the other process answers ROLE master
	other := startHostile(t, func(h *hostile) {
		h.reply = func(cn *hconn, args [][]byte, out []byte) []byte {
			if string(args[0]) == "ROLE" {
				if promoted.Load() {
					return []byte("*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n")
				}
				return []byte("*5\r\n$5\r\nslave\r\n$9\r\n127.0.0.1\r\n:1\r\n$9\r\nconnected\r\n:0\r\n")
			}
			return out
		}
	})
	var sents []*claimSentinel
	var addrs []string
	for k := 0; k < 3; k++ {
		s := startClaimSentinel(t, primary.addr(), 20, other.addr())
		sents = append(sents, s)
		addrs = append(addrs, s.ln.Addr().String())
	}
	defer func(d time.Duration) { switchAsk = d }(switchAsk)
	switchAsk = 5 * time.Second // the fake sentinels answer, however loaded the machine
	u := "redis-sentinel://" + addrs[0] + "?sentinelMasterId=m&sentinel=" + addrs[1] + "&sentinel=" + addrs[2]
	c, err := New(Config{Addrs: []string{u}, DialTimeout: 2 * time.Second, ReconnectMin: 10 * time.Millisecond, ReconnectMax: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.NodeErr(0); err != nil || c.Primary(0) != primary.addr() {
		t.Fatalf("primary %q, %v", c.Primary(0), err)
	}
	// the watcher read the 20 bogus claims once it PINGs (a bounded wait)
	pings := func() (n int64) {
		for _, s := range sents {
			n += s.pings.Load()
		}
		return n
	}
	for k := 0; pings() == 0; k++ {
		if k == 1000 {
			t.Fatal("the switch watcher never subscribed and pinged")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := accepted.Load(); n != 1 || c.Primary(0) != primary.addr() || !c.NodeUp(0) {
		t.Fatalf("after 20 bogus +switch-master: %d connections to the primary (want 1), primary %q, up %v", n, c.Primary(0), c.NodeUp(0))
	}
	// the other process is promoted and a majority names it: followed
	promoted.Store(true)
	for _, s := range sents {
		s.names(other.addr())
	}
	// a new subscription (the watcher's connection dropped) brings claims again
	for _, s := range sents {
		s.mu.Lock()
		for _, cn := range s.conns {
			_ = cn.Close()
		}
		s.mu.Unlock()
	}
	for k := 0; c.Primary(0) != other.addr(); k++ {
		if k == 1000 {
			t.Fatalf("the switch the majority names was not followed: primary %q", c.Primary(0))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
