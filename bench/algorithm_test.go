package bench

import (
	"bytes"
	"context"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redmux/redmux/bench/load"
	"github.com/redmux/redmux/fakeserver"
	"github.com/redmux/redmux/internal/lockrule"
	"github.com/redmux/redmux/redlock/scripts"
	"github.com/redmux/redmux/resp"
	"github.com/stretchr/testify/require"
)

// recorder is a minimal RESP server that answers the lock commands (SET: OK,
// EVALSHA: 1, SCRIPT LOAD: the script's SHA, anything else: OK) and records
// the PX argument of every SET.
type recorder struct {
	ln  net.Listener
	mu  sync.Mutex
	pxs []int64
	wg  sync.WaitGroup
}

func startRecorder(t *testing.T) *recorder {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	r := &recorder{ln: ln}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			r.wg.Add(1)
			go func() { defer r.wg.Done(); r.serve(c) }()
		}
	}()
	t.Cleanup(func() { ln.Close(); r.wg.Wait() })
	return r
}

func (r *recorder) serve(c net.Conn) {
	defer c.Close()
	var p resp.Parser
	buf := make([]byte, 0, 1<<16)
	tmp := make([]byte, 4096)
	for {
		n, err := c.Read(tmp)
		if err != nil {
			return
		}
		buf = append(buf, tmp[:n]...)
		var out []byte
		for len(buf) > 0 {
			f, k, err := p.Parse(buf)
			if err != nil {
				break
			}
			raw := f.Raw
			switch {
			case bytes.Contains(raw, []byte("$3\r\nSET\r\n")):
				if i := bytes.Index(raw, []byte("$2\r\nPX\r\n$")); i >= 0 {
					rest := raw[i+len("$2\r\nPX\r\n$"):]
					rest = rest[bytes.Index(rest, []byte("\r\n"))+2:]
					px, _ := strconv.ParseInt(string(rest[:bytes.Index(rest, []byte("\r\n"))]), 10, 64)
					r.mu.Lock()
					r.pxs = append(r.pxs, px)
					r.mu.Unlock()
				}
				out = append(out, "+OK\r\n"...)
			case bytes.Contains(raw, []byte("EVALSHA")):
				out = append(out, ":1\r\n"...)
			case bytes.Contains(raw, []byte("$4\r\nMGET\r\n")):
				// a data-set marker in service (docs/OPERATIONS.md, rule 4)
				out = append(out, "*3\r\n$6\r\nrec-id\r\n$-1\r\n$5\r\n10001\r\n"...)
			case bytes.Contains(raw, []byte("SCRIPT")):
				sha := "0000000000000000000000000000000000000000"
				for _, s := range append(append(append(append([]scripts.Script(nil), scripts.All...), scripts.Multi...), scripts.Fenced...), scripts.Markers...) {
					if bytes.Contains(raw, []byte(s.Text)) {
						sha = s.SHA
					}
				}
				out = append(out, "$40\r\n"+sha+"\r\n"...)
			default:
				out = append(out, "+OK\r\n"...)
			}
			buf = buf[k:]
		}
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

func (r *recorder) px() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int64(nil), r.pxs...)
}

func strategyWorker(t *testing.T, name string, addrs []string, p lockParams) (lockStrategy, load.Worker) {
	s, err := newStrategy(name, addrs, p, 2)
	require.NoError(t, err, name)
	t.Cleanup(func() { s.Close() })
	w, err := s.NewWorker(context.Background())
	require.NoError(t, err, name)
	t.Cleanup(func() { w.Close() })
	return s, w
}

// Issue 12 item 7 / bench/doc.go: every strategy runs redlock's algorithm.
// The PX argument is redlock's (whole milliseconds rounded up; seq and
// fanout used to truncate).
func TestStrategiesSendRedlocksTTL(t *testing.T) {
	ttl := 10*time.Second + 500*time.Microsecond
	want := lockrule.TTLMillis(ttl)
	require.Equal(t, int64(10001), want)
	for _, name := range allStrategies {
		rec := startRecorder(t)
		p := lockParams{TTL: ttl, Timeout: time.Second, DialTimeout: time.Second, DriftFactor: 0.01, DriftFixed: 2 * time.Millisecond, FreshNodes: true}
		_, w := strategyWorker(t, name, []string{rec.ln.Addr().String()}, p)
		ok, err := w.Acquire(context.Background(), "k")
		require.NoError(t, err, name)
		require.True(t, ok, name)
		require.Equal(t, []int64{want}, rec.px(), name)
	}
}

// The strategies decide alike on the same node states: a quorum with nodes
// down, no quorum (an error), and refusals (not acquired, no error), after
// which the attempt's grants are released on every node.
func TestStrategiesDecideAlike(t *testing.T) {
	c, err := fakeserver.StartCluster(5, fakeserver.Config{})
	require.NoError(t, err)
	defer c.Close()
	p := lockParams{TTL: 10 * time.Second, Timeout: 500 * time.Millisecond, DialTimeout: time.Second, DriftFactor: 0.01, DriftFixed: 2 * time.Millisecond, FreshNodes: true}
	ctx := context.Background()
	workers := map[string]load.Worker{}
	for _, name := range allStrategies {
		_, workers[name] = strategyWorker(t, name, c.Addrs(), p)
	}

	// Keys held by someone else on nodes 0, 1, 2: refused by a quorum.
	for _, name := range allStrategies {
		key := "held:" + name
		for i := 0; i < 3; i++ {
			_, err := command(ctx, c.Addrs()[i], &connOpts{dialTimeout: time.Second, timeout: time.Second}, "SET", key, "other", "PX", "60000")
			require.NoError(t, err)
		}
		ok, err := workers[name].Acquire(ctx, key)
		require.NoError(t, err, name)
		require.False(t, ok, name)
		// The grants on nodes 3 and 4 were released (redlock waits for one
		// answer, so poll briefly).
		deadline := time.Now().Add(2 * time.Second)
		held := func(i int) bool { _, ok := c.Nodes[i].Get(key); return ok }
		for (held(3) || held(4)) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		require.False(t, held(3), "%s: grant left on node 3", name)
		require.False(t, held(4), "%s: grant left on node 4", name)
		v, _ := c.Nodes[0].Get(key)
		require.Equal(t, "other", string(v), name)
	}

	// Two of five down: acquired (quorum 3).
	c.Nodes[3].Down()
	c.Nodes[4].Down()
	for _, name := range allStrategies {
		ok, err := workers[name].Acquire(ctx, "q:"+name)
		require.NoError(t, err, name)
		require.True(t, ok, name)
		require.NoError(t, workers[name].Release(ctx), name)
	}
	// Three of five down: quorum lost, an error for every strategy.
	c.Nodes[2].Down()
	for _, name := range allStrategies {
		ok, err := workers[name].Acquire(ctx, "nq:"+name)
		require.False(t, ok, name)
		require.ErrorIs(t, err, errNoQuorum, name)
	}
}

// The validity rule is redlock's in every strategy: a quorum that answers
// after the lock's validity (ttl - elapsed - drift) ran out is a failure
// (errValidity), not an acquisition. With a 4ms TTL (drift 2.04ms) and every
// node answering 5ms late, no attempt can finish in time, however fast the
// machine.
func TestStrategiesApplyTheValidityRuleAlike(t *testing.T) {
	c, err := fakeserver.StartCluster(3, fakeserver.Config{})
	require.NoError(t, err)
	defer c.Close()
	p := lockParams{TTL: 4 * time.Millisecond, Timeout: time.Second, DialTimeout: time.Second, DriftFactor: 0.01, DriftFixed: 2 * time.Millisecond, FreshNodes: true}
	for _, name := range allStrategies {
		_, w := strategyWorker(t, name, c.Addrs(), p)
		for _, n := range c.Nodes {
			n.SetLatency(5*time.Millisecond, 0)
		}
		ok, err := w.Acquire(context.Background(), "v:"+name)
		require.False(t, ok, name)
		require.ErrorIs(t, err, errValidity, name)
		for _, n := range c.Nodes {
			n.SetLatency(0, 0)
		}
	}
}
