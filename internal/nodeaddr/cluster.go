package nodeaddr

import (
	"net/url"
	"slices"
	"strings"
)

// ClusterScheme is the URL scheme of a Redis Cluster node:
//
//	redis-cluster://[[user]:password@]host[:port]
//	    [?seed=host2[:port2]]...[&protocol=3][&client_name=name]
//
// The host and every seed are cluster members asked for the slot map
// (CLUSTER SHARDS, else CLUSTER SLOTS); the credentials are the cluster's
// (every member's). Further seeds are repeated seed options rather than
// commas (lettuce's form), which node lists (redmux-bench -nodes) take for
// node separators, as for redis-sentinel://. A cluster has one database:
// db is refused.
const ClusterScheme = "redis-cluster"

// clusterOptions are the query options of a redis-cluster:// URL besides
// protocol and client_name.
var clusterOptions = []string{"seed"}

// Cluster is a Redis Cluster node: the members to ask for the slot map
// (mux asks them at New and whenever a reply or a broken connection says
// the map moved).
type Cluster struct {
	Seeds []string // host:port, in the URL's order
}

// parseCluster fills ns, a redis-cluster:// node, from u (its password
// already checked) and returns it.
func (e addrErr) parseCluster(ns Node, u *url.URL, cfg *Defaults) (Node, error) {
	if u.Opaque != "" {
		return ns, e.bad("want %s://host:port[?seed=host:port]", ClusterScheme)
	}
	if cfg.TLS != nil {
		return ns, e.bad("%s:// nodes are plaintext (TLS to cluster members is not supported yet) but Config.TLS is set", ClusterScheme)
	}
	if strings.Contains(u.Host, ",") {
		return ns, e.bad("one member in the host part: write further seeds as &seed=host:port options (a comma separates nodes in node lists)")
	}
	if p := strings.Trim(u.Path, "/"); p != "" && p != "0" {
		return ns, e.bad("path %q: a Redis Cluster has one database (0)", u.Path)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return ns, e.bad("malformed query (escape special characters of option values with %%XX)")
	}
	for k, v := range q {
		switch {
		case k == "db":
			if v[0] != "0" {
				return ns, e.bad("db=%q: a Redis Cluster has one database (0)", v[0])
			}
		case slices.Contains(urlTLSOptions, k):
			return ns, e.bad("option %q: %s:// nodes are plaintext (TLS is not supported yet)", k, ClusterScheme)
		case !slices.Contains(clusterOptions, k) && !slices.Contains(urlOptions, k):
			return ns, e.bad("unknown option %q (known for %s://: seed, protocol, client_name)", k, ClusterScheme)
		}
		if k != "seed" && len(v) > 1 {
			return ns, e.bad("option %q given twice", k)
		}
	}
	first, err := hostPortDefault(u.Host, DefaultPort)
	if err != nil {
		return ns, e.bad("member %q: %v", u.Host, err)
	}
	cs := &Cluster{Seeds: []string{first}}
	for _, s := range q["seed"] {
		hp, err := hostPortDefault(s, DefaultPort)
		if err != nil {
			return ns, e.bad("seed %q: %v", s, err)
		}
		if slices.Contains(cs.Seeds, hp) {
			return ns, e.bad("seed %s given twice", hp)
		}
		cs.Seeds = append(cs.Seeds, hp)
	}
	if err := e.userinfo(u, ClusterScheme, &ns); err != nil {
		return ns, err
	}
	// protocol and client_name, as a redis:// URL's
	rest := *u
	rest.Path = ""
	other := url.Values{}
	for k, v := range q {
		if k != "seed" && k != "db" {
			other[k] = v
		}
	}
	rest.RawQuery = other.Encode()
	if _, err := e.options(&rest, &ns); err != nil {
		return ns, err
	}
	ns.DB = 0
	ns.Cluster = cs
	ns.Host, ns.Port = "", 0 // each shard's, from the slot map
	ns.Display = clusterDisplay(u, cs)
	return ns, nil
}

// clusterDisplay is a cluster node's printable address: its user
// (password as ***) and its seeds.
func clusterDisplay(u *url.URL, cs *Cluster) string {
	var b strings.Builder
	b.WriteString(ClusterScheme + "://")
	if u.User != nil {
		b.WriteString(u.User.Username() + ":***@")
	}
	b.WriteString(cs.Seeds[0])
	for k, a := range cs.Seeds[1:] {
		if k == 0 {
			b.WriteString("?seed=" + a)
		} else {
			b.WriteString("&seed=" + a)
		}
	}
	return b.String()
}
