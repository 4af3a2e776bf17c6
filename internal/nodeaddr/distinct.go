package nodeaddr

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
)

// A quorum counts independent masters: one server listed twice would be
// counted twice (three entries of one server in a list of three are a
// "majority" of one). mux.New (with Distinct) refuses a list in which two
// entries reach one server as far as their addresses tell, after
// normalisation: a host is
// compared case-insensitively without a trailing dot, an IP address in
// its canonical form (::ffff:127.0.0.1 is 127.0.0.1, [::1] is ::1),
// localhost as 127.0.0.1, a URL's default port is 6379, and what a URL
// adds (user, database, options) does not make another server. A
// redis-cluster:// node is each of its seeds (a plain node at a seed is
// one of its shards, two cluster nodes sharing a seed are one cluster);
// a redis-sentinel:// node is its master name at each of its sentinels.
// Names that resolve to one address are beyond this check: redlock.New
// also compares the run_id each node reported when it was set up.

// hostKey is host:port in the normalised form above.
func hostKey(host string, port int) string {
	h := strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if h == "localhost" {
		h = "127.0.0.1"
	}
	if ip := net.ParseIP(h); ip != nil {
		h = ip.String()
	}
	return net.JoinHostPort(h, strconv.Itoa(port))
}

// hostPortKey is hostKey of a host:port string (itself when unparsable).
func hostPortKey(hp string) string {
	h, p, err := net.SplitHostPort(hp)
	if err != nil {
		return hp
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return hp
	}
	return hostKey(h, port)
}

// serverKeys are the servers node ns reaches, in normalised form.
func (ns *Node) serverKeys() []string {
	switch {
	case ns.Cluster != nil:
		keys := make([]string, len(ns.Cluster.Seeds))
		for i, s := range ns.Cluster.Seeds {
			keys[i] = hostPortKey(s)
		}
		return keys
	case ns.Sentinel != nil:
		keys := make([]string, len(ns.Sentinel.Sentinels))
		for i, s := range ns.Sentinel.Sentinels {
			keys[i] = "sentinel master " + strconv.Quote(ns.Sentinel.MasterName) + " at " + hostPortKey(s)
		}
		return keys
	}
	return []string{hostKey(ns.Host, ns.Port)}
}

// Distinct refuses nodes of which two reach one server (see above); the
// error, which wraps ErrConfig, names both entries by their printable
// forms.
func Distinct(nodes []Node) error {
	seen := make(map[string]int, len(nodes))
	for i := range nodes {
		keys := nodes[i].serverKeys()
		slices.Sort(keys)
		keys = slices.Compact(keys)
		for _, k := range keys {
			if j, ok := seen[k]; ok {
				return fmt.Errorf("%w: addresses %d %q and %d %q are one server (%s): a quorum counts independent masters, list each once",
					ErrConfig, j, nodes[j].Display, i, nodes[i].Display, k)
			}
			seen[k] = i
		}
	}
	return nil
}

// CheckDistinct parses addrs as mux.New does (d's defaults) and reports
// the first error, or two entries that reach one server (New's check, for
// callers that want the answer before dialling: a command line's usage
// error). Errors wrap ErrConfig and never contain a password.
func CheckDistinct(addrs []string, d Defaults) error {
	nodes := make([]Node, 0, len(addrs))
	for i, a := range addrs {
		ns, err := Parse(i, a, d)
		if err != nil {
			return err
		}
		nodes = append(nodes, ns)
	}
	return Distinct(nodes)
}
