package mux

import (
	"context"
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redmux/redmux/internal/nodeaddr"
	"github.com/redmux/redmux/internal/redisproc"
	"github.com/redmux/redmux/resp"
)

// sentinelURL is the redis-sentinel:// address of g's service, with the
// sentinels in sentinels (default: g's), the node's user information
// (e.g. ":pw@") and extra options ("&k=v").
func sentinelURL(g *redisproc.SentinelGroup, userinfo string, sentinels []string, extra string) string {
	if sentinels == nil {
		sentinels = g.SentinelAddrs()
	}
	u := nodeaddr.SentinelScheme + "://" + userinfo + sentinels[0] + "?sentinelMasterId=" + g.Name
	for _, s := range sentinels[1:] {
		u += "&sentinel=" + s
	}
	return u + extra
}

// fakeSentinel serves GET-MASTER-ADDR-BY-NAME with answer (raw RESP; ""
// never answers: a sentinel that hangs) and OK to anything else.
func fakeSentinel(t *testing.T, answer string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
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
						out := "+OK\r\n"
						if strings.Contains(cmd, "GET-MASTER-ADDR-BY-NAME") {
							out = answer
						}
						if out != "" {
							_, _ = c.Write([]byte(out))
						}
					}
				}
			}()
		}
	}()
	return l.Addr().String()
}

// addrReply is a GET-MASTER-ADDR-BY-NAME reply naming hostport.
func addrReply(hostport string) string {
	h, p, _ := net.SplitHostPort(hostport)
	return string(resp.AppendCommand(nil, h, p))
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	p, err := redisproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return "127.0.0.1:" + strconv.Itoa(p)
}

// set runs SET key val on every node of c and returns node 0's error.
func setNode0(c *Client, key, val string) error {
	b := c.NewBatch()
	b.Broadcast(resp.AppendCommand(nil, "SET", key, val))
	if _, err := c.Do(context.Background(), b, Policy{Timeout: 300 * time.Millisecond}); err != nil {
		return err
	}
	r, err := b.Last(0)
	if err == nil && !r.IsOK() {
		err = errors.New("reply " + r.String())
	}
	return err
}

// getOn reads key on the server at addr directly.
func getOn(t *testing.T, addr, pw, key string) any {
	t.Helper()
	v, err := redisproc.Command(addr, pw, "GET", key)
	if err != nil {
		t.Fatalf("GET %s on %s: %v", key, addr, err)
	}
	return v
}

// spread formats min/median/max of ds.
func spread(ds []time.Duration) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	r := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	return r(s[0]) + "/" + r(s[len(s)/2]) + "/" + r(s[len(s)-1])
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
