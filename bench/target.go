package bench

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redmux/redmux/fakeserver"
	"github.com/redmux/redmux/internal/nodeaddr"
	"github.com/redmux/redmux/internal/redisproc"
	"github.com/redmux/redmux/mux"
	"github.com/redmux/redmux/resp"
)

// errNodeUnreachable is returned (wrapped) when the preflight check cannot
// reach a node or set up a connection to it.
var errNodeUnreachable = errors.New("node unreachable")

var childCapable atomic.Bool

// ChildMain must be called first thing in main (and in TestMain of tests
// that run benchmarks): when this process was started as the embedded
// cluster's child, it serves the cluster until its stdin closes and exits
// (fakeserver.ServeChild); otherwise it returns at once and enables the
// child-process cluster.
//
// Running the embedded cluster in a child process keeps the server's CPU
// time and allocations out of the client's per-operation figures.
func ChildMain() {
	detachChild()
	fakeserver.ServeChild()
	childCapable.Store(true)
}

// target is the set of nodes under test and how to tear it down.
type target struct {
	addrs []string
	desc  string
	kind  string // "embedded", "real-local", "nodes"
	pids  []int  // processes whose CPU is the servers' (empty: unknown)
	admin bool   // nodes accept FAKE admin commands
	// silent marks the nodes that never answer (-fault blackhole): the
	// server snapshots skip them instead of waiting out a timeout twice
	// per step.
	silent map[int]bool
	close  func()
	// rootCAs is the CA of certificates made for the run (-real-local
	// -tls); nil otherwise.
	rootCAs *x509.CertPool
}

// startEmbedded starts an n-node fake cluster, in a child process when
// possible (see ChildMain), else in this process.
func startEmbedded(n int, password string, inProcess bool) (*target, error) {
	if !inProcess && childCapable.Load() {
		t, err := startChild(n, password)
		if err == nil {
			return t, nil
		}
		return nil, fmt.Errorf("starting the embedded cluster's process: %w", err)
	}
	c, err := fakeserver.StartCluster(n, fakeserver.Config{Password: password})
	if err != nil {
		return nil, err
	}
	return &target{
		addrs: c.Addrs(), kind: "embedded", admin: true,
		desc: fmt.Sprintf("embedded fake cluster, %d nodes, in the benchmark's process", n),
		pids: []int{os.Getpid()}, close: func() { _ = c.Close() },
	}, nil
}

func startChild(n int, password string) (*target, error) {
	c, err := fakeserver.StartChild(n, fakeserver.ChildOptions{Password: password})
	if err != nil {
		return nil, err
	}
	return &target{
		addrs: c.Addrs(), kind: "embedded", admin: true,
		desc: fmt.Sprintf("embedded fake cluster, %d nodes, in a child process", n),
		pids: []int{c.Pid()}, close: func() { _ = c.Close() },
	}, nil
}

// startRealLocal starts n local redis-server processes (stopped by pid in
// close). With useTLS they speak TLS only, with a CA and certificates made
// for the run in a temporary directory (removed in close); t.rootCAs is
// that CA.
func startRealLocal(n int, password string, useTLS bool) (*target, error) {
	opt := redisproc.Options{Password: password}
	cleanup := func() {}
	var pool *x509.CertPool
	if useTLS {
		if !redisproc.SupportsTLS() {
			return nil, fmt.Errorf("-real-local -tls: %s was built without TLS (--tls-port)", redisproc.Binary())
		}
		dir, err := os.MkdirTemp("", "redmux-bench-tls-")
		if err != nil {
			return nil, err
		}
		cleanup = func() { _ = os.RemoveAll(dir) }
		files, err := redisproc.WriteCerts(dir, redisproc.CertOptions{})
		if err == nil {
			pool, err = nodeaddr.LoadCertPool(files.CAFile)
		}
		if err != nil {
			cleanup()
			return nil, fmt.Errorf("certificates for -real-local -tls: %w", err)
		}
		opt.TLS = files
	}
	list, err := redisproc.StartN(n, opt)
	if err != nil {
		cleanup()
		return nil, err
	}
	t := &target{addrs: redisproc.Addrs(list), kind: "real-local", rootCAs: pool,
		close: func() { redisproc.StopAll(list); cleanup() }}
	for _, s := range list {
		t.pids = append(t.pids, s.Pid())
	}
	t.desc = fmt.Sprintf("%d local redis-server processes (started and stopped by redmux-bench)", n)
	if useTLS {
		t.desc = fmt.Sprintf("%d local redis-server processes over TLS (certificates made for the run; started and stopped by redmux-bench)", n)
	}
	return t, nil
}

// startRealLocalShape starts n local nodes of the given shape (-shape):
// standalone redis-servers (startRealLocal), or n Redis Clusters of shards
// primaries each, or n Sentinel services (a primary, a replica, 3
// sentinels), every process stopped by pid in close.
func startRealLocalShape(n int, shape string, shards int, password string, useTLS bool) (*target, error) {
	var procs []*redisproc.Server
	var stops []func()
	t := &target{kind: "real-local"}
	t.close = func() {
		for _, s := range stops {
			s()
		}
	}
	switch shape {
	case shapeStandalone, "":
		return startRealLocal(n, password, useTLS)
	case shapeCluster:
		for i := 0; i < n; i++ {
			cl, err := redisproc.StartCluster(redisproc.ClusterOptions{Primaries: shards, Password: password})
			if err != nil {
				t.close()
				return nil, fmt.Errorf("-shape cluster: %w", err)
			}
			stops = append(stops, cl.Stop)
			procs = append(procs, cl.All()...)
			a := cl.Addrs()
			u := nodeaddr.ClusterScheme + "://" + a[0]
			for k, s := range a[1:] {
				u += map[bool]string{true: "?", false: "&"}[k == 0] + "seed=" + s
			}
			t.addrs = append(t.addrs, u)
		}
		t.desc = fmt.Sprintf("%d local Redis Clusters of %d primaries each, one per node (%d redis-server processes, started and stopped by redmux-bench)", n, shards, len(procs))
	case shapeSentinel:
		for i := 0; i < n; i++ {
			g, err := redisproc.StartSentinelGroup(redisproc.SentinelOptions{Password: password})
			if err != nil {
				t.close()
				return nil, fmt.Errorf("-shape sentinel: %w", err)
			}
			stops = append(stops, g.Stop)
			procs = append(procs, g.Data...)
			s := g.SentinelAddrs()
			t.addrs = append(t.addrs, nodeaddr.SentinelScheme+"://"+s[0]+"?sentinelMasterId="+g.Name+"&sentinel="+s[1]+"&sentinel="+s[2])
		}
		t.desc = fmt.Sprintf("%d local Sentinel services, one per node (each a primary, a replica and 3 sentinels; started and stopped by redmux-bench)", n)
	}
	for _, s := range procs {
		t.pids = append(t.pids, s.Pid())
	}
	return t, nil
}

// command sends one command on a fresh set-up connection (replies awaited up
// to the dial timeout) and returns a copy of its reply's string value.
func command(ctx context.Context, addr string, opt *connOpts, args ...string) ([]byte, error) {
	o := *opt
	o.timeout = opt.dialTimeout
	pc := newPlainConn(addr, &o)
	if err := pc.connect(ctx, o.dialTimeout); err != nil {
		return nil, err
	}
	defer pc.close()
	r, err := pc.do(ctx, resp.AppendCommand(nil, args...))
	if err != nil {
		return nil, err
	}
	if r.IsError() {
		return nil, fmt.Errorf("%w: %s", errServerReply, r.ErrorText())
	}
	return append([]byte(nil), r.Data...), nil
}

// preflight connects to every node (AUTH, SELECT, SCRIPT LOAD, PING).
func preflight(ctx context.Context, addrs []string, opt *connOpts) error {
	for _, a := range addrs {
		if na, _ := opt.node(a); na.Sentinel != nil || na.Cluster != nil {
			// reached through mux (the sentinels, the slot map); the
			// plain connection's refusal of such a node is no failure here
			if err := preflightMux(a, opt); err != nil {
				return fmt.Errorf("%w: %s: %s", errNodeUnreachable, nodeaddr.RedactURL(a), secrets{opt.password, nodeaddr.URLPassword(a)}.hide(err.Error()))
			}
			continue
		}
		if _, err := command(ctx, a, opt, "PING"); err != nil {
			shown := nodeaddr.RedactURL(a)
			if errors.Is(err, errAuth) || errors.Is(err, errAuthRequired) || errors.Is(err, errServerReply) || errors.Is(err, errNotRedis) {
				// The node answered: it is reachable, it refused.
				return fmt.Errorf("node %s: %w", shown, err)
			}
			return fmt.Errorf("%w: %s: %s", errNodeUnreachable, shown, secrets{opt.password, nodeaddr.URLPassword(a)}.hide(err.Error()))
		}
	}
	return nil
}

// preflightMux dials a Sentinel or cluster node as mux does (New dials
// every connection before it returns) and returns the node's error.
func preflightMux(a string, opt *connOpts) error {
	c, err := mux.New(mux.Config{Addrs: []string{a}, Username: opt.user, Password: opt.password, DB: opt.db, DialTimeout: opt.dialTimeout})
	if err != nil {
		return err
	}
	defer c.Close()
	return c.NodeErr(0)
}

// applyFaults sets -latency and -node-cap on every embedded node, then each
// -fault, with the FAKE admin command.
func applyFaults(ctx context.Context, t *target, opt *connOpts, latency time.Duration, nodeCap float64, faults []Fault) error {
	if latency > 0 {
		for _, a := range t.addrs {
			if _, err := command(ctx, a, opt, "FAKE", "LATENCY", latency.String()); err != nil {
				return fmt.Errorf("setting latency on %s: %w", a, err)
			}
		}
	}
	if nodeCap > 0 {
		for _, a := range t.addrs {
			if _, err := command(ctx, a, opt, "FAKE", "THROUGHPUT", strconv.FormatFloat(nodeCap, 'f', -1, 64)); err != nil {
				return fmt.Errorf("setting the throughput cap on %s: %w", a, err)
			}
		}
	}
	for _, f := range faults {
		a := t.addrs[f.Node]
		var err error
		switch f.Kind {
		case "slow":
			_, err = command(ctx, a, opt, "FAKE", "LATENCY", f.Fixed.String(), f.Jitter.String())
		case "blackhole":
			_, err = command(ctx, a, opt, "FAKE", "BLACKHOLE")
			if t.silent == nil {
				t.silent = map[int]bool{}
			}
			t.silent[f.Node] = true
		case "cap":
			_, err = command(ctx, a, opt, "FAKE", "THROUGHPUT", strconv.FormatFloat(f.Rate, 'f', -1, 64))
		case "down":
			// The node drops this connection too: no reply is expected.
			// The node drops this connection too (no reply is expected) and
			// goes down just after its reply has left: allow it a moment.
			_, _ = command(ctx, a, opt, "FAKE", "DOWN")
			err = errors.New("node still answers 1s after FAKE DOWN")
			for try := 0; try < 50; try++ {
				if _, perr := command(ctx, a, opt, "PING"); perr != nil {
					err = nil
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		if err != nil {
			return fmt.Errorf("fault %s on %s: %w", f, a, err)
		}
	}
	return nil
}

// cmdStat is one command's INFO commandstats counters.
type cmdStat struct {
	Calls int64
	Usec  int64
}

// commandStats reads INFO commandstats from addr.
func commandStats(ctx context.Context, addr string, opt *connOpts) (map[string]cmdStat, error) {
	b, err := command(ctx, addr, opt, "INFO", "commandstats")
	if err != nil {
		return nil, err
	}
	return parseCommandStats(string(b)), nil
}

// parseCommandStats parses "cmdstat_set:calls=1,usec=2,usec_per_call=2.00,..."
// lines; others are ignored.
func parseCommandStats(s string) map[string]cmdStat {
	out := map[string]cmdStat{}
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		name, rest, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		var st cmdStat
		for _, kv := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				continue
			}
			switch k {
			case "calls":
				st.Calls = n
			case "usec":
				st.Usec = n
			}
		}
		out[strings.ToLower(strings.TrimPrefix(name, "cmdstat_"))] = st
	}
	return out
}

// serverInfo returns "redis_version" (and whether it is the fake server)
// from INFO server of addr.
func serverInfo(ctx context.Context, addr string, opt *connOpts) string {
	b, err := command(ctx, addr, opt, "INFO", "server")
	if err != nil {
		return ""
	}
	var ver, fake string
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
		switch k {
		case "redis_version":
			ver = v
		case "fake_server":
			fake = v
		}
	}
	if fake != "" {
		return fake + " (redis_version " + ver + ")"
	}
	if ver != "" {
		return "redis " + ver
	}
	return ""
}
