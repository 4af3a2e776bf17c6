package mux

import (
	"crypto/tls"
	"sync/atomic"

	"github.com/redmux/redmux/internal/nodeaddr"
)

// nodeSpec is one node's resolved connection settings: its address (from a
// host:port or a redis:// / rediss:// URL, parsed by internal/nodeaddr)
// and what the URL or the Config says about credentials, database,
// protocol and TLS.
type nodeSpec struct {
	host       string
	port       int
	display    string // the address as printed: the URL with its password as ***
	username   string
	password   string
	db         int
	resp3      bool
	clientName string
	tls        *tls.Config // nil: plaintext
	// sentinel: a Sentinel-managed node (redis-sentinel://); host and
	// port are then empty, the primary's being asked of the sentinels at
	// every dial (sentinel.go).
	sentinel *sentinelSpec
	// cluster: a Redis Cluster node (redis-cluster://); host and port are
	// then empty, each command going to the primary of its key's slot
	// (cluster.go).
	cluster *clusterSpec
}

// sentinelSpec is a Sentinel-managed node: the sentinels to ask, the
// service's name and the sentinels' credentials (the node's own are in
// its nodeSpec and apply to the primary).
type sentinelSpec struct {
	master             string
	addrs              []string // host:port of every sentinel, in the URL's order
	username, password string
	secrets            []string     // the node's and the sentinels' passwords (cleanText)
	first              atomic.Int32 // the sentinel asked first: the last whose primary was set up
}

// clusterSpec is a Redis Cluster node: the members asked for the slot map.
type clusterSpec struct {
	seeds []string // host:port, in the URL's order
}

// defaults are the Config's settings a node's URL may override.
func (cfg *Config) defaults() nodeaddr.Defaults {
	return nodeaddr.Defaults{
		Username: cfg.Username, Password: cfg.Password, DB: cfg.DB,
		RESP3: cfg.RESP3, ClientName: cfg.ClientName, TLS: cfg.TLS,
	}
}

// specOf is the nodeSpec of node n, as nodeaddr.Parse resolved it.
func specOf(n *nodeaddr.Node) nodeSpec {
	ns := nodeSpec{
		host: n.Host, port: n.Port, display: n.Display,
		username: n.Username, password: n.Password, db: n.DB,
		resp3: n.RESP3, clientName: n.ClientName, tls: n.TLS,
	}
	if s := n.Sentinel; s != nil {
		ns.sentinel = &sentinelSpec{master: s.MasterName, addrs: s.Sentinels, username: s.Username, password: s.Password}
		// what the sentinels' answers are cleaned of
		ns.sentinel.secrets = ns.secrets()
	}
	if c := n.Cluster; c != nil {
		ns.cluster = &clusterSpec{seeds: c.Seeds}
	}
	return ns
}
