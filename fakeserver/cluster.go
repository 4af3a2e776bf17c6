package fakeserver

import (
	"errors"
	"fmt"
	"net"
	"strconv"
)

// Cluster is a set of independent fake nodes started together (Redlock's N
// independent masters, not Redis Cluster).
type Cluster struct{ Nodes []*Node }

// StartCluster starts n nodes and returns once every node accepts
// connections. With cfg.Addr empty or port 0 each node gets its own free
// port on the host (default 127.0.0.1); with "host:P" the nodes listen on
// ports P, P+1, ..., P+n-1. On error the nodes already started are closed.
func StartCluster(n int, cfg Config) (*Cluster, error) {
	if n <= 0 {
		return nil, errors.New("fakeserver: cluster needs at least one node")
	}
	host, port := "127.0.0.1", 0
	if cfg.Addr != "" {
		h, p, err := net.SplitHostPort(cfg.Addr)
		if err != nil {
			return nil, fmt.Errorf("fakeserver: cluster address %q: %w", cfg.Addr, err)
		}
		port, err = strconv.Atoi(p)
		if err != nil || port < 0 || port+n-1 > 65535 {
			return nil, fmt.Errorf("fakeserver: cluster address %q: bad port range", cfg.Addr)
		}
		if h != "" {
			host = h
		}
	}
	c := &Cluster{}
	for i := 0; i < n; i++ {
		nc := cfg
		p := 0
		if port > 0 {
			p = port + i
		}
		nc.Addr = net.JoinHostPort(host, strconv.Itoa(p))
		node, err := StartNode(nc)
		if err != nil {
			_ = c.Close()
			return nil, err
		}
		c.Nodes = append(c.Nodes, node)
	}
	return c, nil
}

// Addrs returns the nodes' addresses, in order.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.Addr()
	}
	return out
}

// Close closes every node.
func (c *Cluster) Close() error {
	var errs []error
	for _, n := range c.Nodes {
		errs = append(errs, n.Close())
	}
	return errors.Join(errs...)
}
