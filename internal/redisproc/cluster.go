package redisproc

import (
	"cmp"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ClusterOptions shape a Redis Cluster (StartCluster).
type ClusterOptions struct {
	// Primaries is the number of shards; default 3.
	Primaries int
	// Replicas per primary; default 0.
	Replicas int
	// NodeTimeout is cluster-node-timeout (default 2 s): how long a
	// primary may be unreachable before its replica takes over.
	NodeTimeout time.Duration
	// Password is every node's requirepass (and masterauth).
	Password string
	// Host is the loopback address every node listens on (and the
	// cluster announces): "127.0.0.1" (the default) or "::1".
	Host string
}

// Cluster is a Redis Cluster of redis-server processes on free loopback
// ports (each with a free cluster bus port, --cluster-port).
type Cluster struct {
	// Primaries[k] was started as shard k's primary (it serves the k-th
	// equal range of slots); Replicas[k] are its replicas.
	Primaries []*Server
	Replicas  [][]*Server
	opt       ClusterOptions
}

// StartCluster starts opt.Primaries primaries and their replicas with
// --cluster-enabled yes, gives primary k the k-th equal range of the
// 16384 slots (CLUSTER ADDSLOTSRANGE), joins them (CLUSTER MEET), makes
// the replicas replicate (CLUSTER REPLICATE), and waits (up to 30 s)
// until every node says cluster_state:ok and names every primary. This is
// what `redis-cli --cluster create` does, without needing redis-cli. Call
// Stop.
func StartCluster(opt ClusterOptions) (*Cluster, error) {
	if opt.Primaries == 0 {
		opt.Primaries = 3
	}
	if opt.NodeTimeout == 0 {
		opt.NodeTimeout = 2 * time.Second
	}
	cl := &Cluster{opt: opt, Replicas: make([][]*Server, opt.Primaries)}
	start := func() (*Server, error) {
		bus, err := freePort(cmp.Or(opt.Host, "127.0.0.1"))
		if err != nil {
			return nil, err
		}
		o := Options{Password: opt.Password, Host: opt.Host, Extra: []string{
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-port", strconv.Itoa(bus),
			"--cluster-node-timeout", strconv.FormatInt(opt.NodeTimeout.Milliseconds(), 10),
			"--repl-diskless-sync-delay", "0",
		}}
		if opt.Password != "" {
			o.Extra = append(o.Extra, "--masterauth", opt.Password)
		}
		return Start(o)
	}
	for k := 0; k < opt.Primaries; k++ {
		s, err := start()
		if err != nil {
			cl.Stop()
			return nil, err
		}
		cl.Primaries = append(cl.Primaries, s)
		for r := 0; r < opt.Replicas; r++ {
			s, err := start()
			if err != nil {
				cl.Stop()
				return nil, err
			}
			cl.Replicas[k] = append(cl.Replicas[k], s)
		}
	}
	if err := cl.create(); err != nil {
		cl.Stop()
		return nil, err
	}
	return cl, nil
}

// create assigns the slots, joins the nodes and waits until the cluster is
// ready.
func (cl *Cluster) create() error {
	pw := cl.opt.Password
	n := len(cl.Primaries)
	for k, p := range cl.Primaries {
		lo, hi := k*16384/n, (k+1)*16384/n-1
		if _, err := Command(p.Addr, pw, "CLUSTER", "ADDSLOTSRANGE", strconv.Itoa(lo), strconv.Itoa(hi)); err != nil {
			return fmt.Errorf("redisproc: CLUSTER ADDSLOTSRANGE on %s: %w", p.Addr, err)
		}
	}
	first := cl.Primaries[0]
	bus := strconv.Itoa(busPort(first, pw)) // MEET names the bus port of the node met
	for _, s := range cl.All()[1:] {
		if _, err := Command(s.Addr, pw, "CLUSTER", "MEET", first.Host, strconv.Itoa(first.Port), bus); err != nil {
			return fmt.Errorf("redisproc: CLUSTER MEET from %s: %w", s.Addr, err)
		}
	}
	if err := cl.waitKnown(30 * time.Second); err != nil {
		return err
	}
	for k, p := range cl.Primaries {
		id, err := nodeID(p.Addr, pw)
		if err != nil {
			return err
		}
		for _, r := range cl.Replicas[k] {
			if _, err := Command(r.Addr, pw, "CLUSTER", "REPLICATE", id); err != nil {
				return fmt.Errorf("redisproc: CLUSTER REPLICATE on %s: %w", r.Addr, err)
			}
		}
	}
	return cl.WaitReady(30 * time.Second)
}

// busPort returns s's cluster bus port (its --cluster-port).
func busPort(s *Server, pw string) int {
	v, err := Command(s.Addr, pw, "CONFIG", "GET", "cluster-port")
	if err == nil {
		if p, err := strconv.Atoi(fields(v)["cluster-port"]); err == nil && p > 0 {
			return p
		}
	}
	return s.Port + 10000
}

// nodeID returns the node's cluster id (CLUSTER MYID).
func nodeID(addr, pw string) (string, error) {
	v, err := Command(addr, pw, "CLUSTER", "MYID")
	if err != nil {
		return "", fmt.Errorf("redisproc: CLUSTER MYID on %s: %w", addr, err)
	}
	return fmt.Sprint(v), nil
}

// waitKnown waits until every node knows every other.
func (cl *Cluster) waitKnown(timeout time.Duration) error {
	all := cl.All()
	deadline := time.Now().Add(timeout)
	for {
		ok := true
		for _, s := range all {
			v, err := Command(s.Addr, cl.opt.Password, "CLUSTER", "NODES")
			if err != nil || strings.Count(fmt.Sprint(v), "\n") < len(all) || strings.Contains(fmt.Sprint(v), "handshake") {
				ok = false
				break
			}
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redisproc: cluster nodes did not meet within %v", timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// WaitReady waits until every running node says cluster_state:ok and its
// CLUSTER SLOTS names as many primaries as the cluster has shards.
func (cl *Cluster) WaitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var why string
	for {
		why = cl.notReady()
		if why == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redisproc: cluster not ready within %v: %s", timeout, why)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (cl *Cluster) notReady() string {
	for _, s := range cl.All() {
		select {
		case <-s.done:
			continue // stopped (a test's failover)
		default:
		}
		v, err := Command(s.Addr, cl.opt.Password, "CLUSTER", "INFO")
		if err != nil {
			return s.Addr + ": " + err.Error()
		}
		if !strings.Contains(fmt.Sprint(v), "cluster_state:ok") {
			return s.Addr + " says cluster_state is not ok"
		}
		slots, err := Command(s.Addr, cl.opt.Password, "CLUSTER", "SLOTS")
		if err != nil {
			return s.Addr + ": " + err.Error()
		}
		l, _ := slots.([]any)
		prim := map[string]bool{}
		for _, e := range l {
			r, _ := e.([]any)
			if len(r) >= 3 {
				p, _ := r[2].([]any)
				if len(p) >= 2 {
					prim[fmt.Sprint(p[1])] = true
				}
			}
		}
		if len(prim) != len(cl.Primaries) {
			return fmt.Sprintf("%s names %d primaries, want %d", s.Addr, len(prim), len(cl.Primaries))
		}
		if info, err := Command(s.Addr, cl.opt.Password, "INFO", "replication"); err == nil && strings.Contains(fmt.Sprint(info), "role:slave") &&
			!strings.Contains(fmt.Sprint(info), "master_link_status:up") {
			return s.Addr + " (a replica) has no link to its primary yet"
		}
	}
	return ""
}

// All returns every node: the primaries, then the replicas.
func (cl *Cluster) All() []*Server {
	out := append([]*Server(nil), cl.Primaries...)
	for _, rs := range cl.Replicas {
		out = append(out, rs...)
	}
	return out
}

// Addrs returns the primaries' addresses (seeds for a client).
func (cl *Cluster) Addrs() []string { return Addrs(cl.Primaries) }

// Stop stops every node by its pid.
func (cl *Cluster) Stop() { StopAll(cl.All()) }

// MoveSlot migrates slot from the node at from to the one at to, keys and
// all, as `redis-cli --cluster reshard` does: CLUSTER SETSLOT IMPORTING
// and MIGRATING, MIGRATE of the slot's keys in batches, then SETSLOT NODE
// on both and on every other primary. It returns how many keys moved.
func (cl *Cluster) MoveSlot(slot int, from, to *Server) (int, error) {
	pw := cl.opt.Password
	fromID, err := nodeID(from.Addr, pw)
	if err != nil {
		return 0, err
	}
	toID, err := nodeID(to.Addr, pw)
	if err != nil {
		return 0, err
	}
	s := strconv.Itoa(slot)
	if _, err := Command(to.Addr, pw, "CLUSTER", "SETSLOT", s, "IMPORTING", fromID); err != nil {
		return 0, fmt.Errorf("redisproc: SETSLOT IMPORTING: %w", err)
	}
	if _, err := Command(from.Addr, pw, "CLUSTER", "SETSLOT", s, "MIGRATING", toID); err != nil {
		return 0, fmt.Errorf("redisproc: SETSLOT MIGRATING: %w", err)
	}
	moved := 0
	for i := 0; i < 1000; i++ {
		v, err := Command(from.Addr, pw, "CLUSTER", "GETKEYSINSLOT", s, "100")
		if err != nil {
			return moved, fmt.Errorf("redisproc: GETKEYSINSLOT: %w", err)
		}
		keys, _ := v.([]any)
		if len(keys) == 0 {
			break
		}
		args := []string{"MIGRATE", to.Host, strconv.Itoa(to.Port), "", "0", "5000"}
		if pw != "" {
			args = append(args, "AUTH", pw)
		}
		args = append(args, "KEYS")
		for _, k := range keys {
			args = append(args, fmt.Sprint(k))
		}
		if _, err := Command(from.Addr, pw, args...); err != nil && !strings.Contains(err.Error(), "NOKEY") {
			return moved, fmt.Errorf("redisproc: MIGRATE: %w", err)
		}
		moved += len(keys)
	}
	for _, p := range append([]*Server{to, from}, cl.Primaries...) {
		if _, err := Command(p.Addr, pw, "CLUSTER", "SETSLOT", s, "NODE", toID); err != nil && p != from && p != to {
			continue // another primary learns it from the bus too
		} else if err != nil {
			return moved, fmt.Errorf("redisproc: SETSLOT NODE on %s: %w", p.Addr, err)
		}
	}
	return moved, nil
}

// ErrNoCluster is returned by Shard for an address not in the cluster.
var ErrNoCluster = errors.New("redisproc: not a node of this cluster")

// Shard returns the index of the shard whose node (primary or replica)
// has addr.
func (cl *Cluster) Shard(addr string) (int, error) {
	for k, p := range cl.Primaries {
		if p.Addr == addr {
			return k, nil
		}
		for _, r := range cl.Replicas[k] {
			if r.Addr == addr {
				return k, nil
			}
		}
	}
	return -1, ErrNoCluster
}
