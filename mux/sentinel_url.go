package mux

import (
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
)

// SentinelScheme is the URL scheme of a Sentinel-managed node (lettuce's):
//
//	redis-sentinel://[[user]:password@]host[:port][/db]?sentinelMasterId=name
//	    [&sentinel=host2[:port2]]...[&sentinel_username=u][&sentinel_password=p]
const SentinelScheme = "redis-sentinel"

// DefaultSentinelPort is the port of a sentinel address that names none.
const DefaultSentinelPort = 26379

// sentinelOptions are the query options of a redis-sentinel:// URL besides
// db, protocol and client_name: sentinelMasterId is lettuce's name for
// the service; sentinel (repeated) lists further sentinels, instead of
// lettuce's commas, which node lists (redmux-bench -nodes) take for node
// separators; sentinel_username and sentinel_password are the sentinels'
// own credentials (go-redis's FailoverOptions.SentinelUsername and
// SentinelPassword).
var sentinelOptions = []string{"sentinelMasterId", "sentinel", "sentinel_username", "sentinel_password"}

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

// parseSentinel fills ns, a redis-sentinel:// node, from u (the URL a,
// parsed; its password already checked) and returns it.
func (e addrErr) parseSentinel(ns nodeSpec, u *url.URL, a string, cfg *Config) (nodeSpec, error) {
	if u.Opaque != "" {
		return ns, e.bad("want %s://host:port?sentinelMasterId=name", SentinelScheme)
	}
	if cfg.TLS != nil {
		return ns, e.bad("%s:// nodes are plaintext (TLS to sentinels and their primaries is not supported yet) but Config.TLS is set", SentinelScheme)
	}
	if strings.Contains(u.Host, ",") {
		return ns, e.bad("one sentinel in the host part: write further sentinels as &sentinel=host:port options (a comma separates nodes in node lists)")
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		// its text could quote part of sentinel_password
		return ns, e.bad("malformed query (escape special characters of option values with %%XX)")
	}
	ss := &sentinelSpec{master: q.Get("sentinelMasterId")}
	for k, v := range q {
		known := slices.Contains(sentinelOptions, k) || slices.Contains(urlOptions, k)
		if !known {
			return ns, e.bad("unknown option %q (known for %s://: %s)", k, SentinelScheme, strings.Join(sentinelKnown(), ", "))
		}
		if slices.Contains(urlTLSOptions, k) {
			return ns, e.bad("option %q: %s:// nodes are plaintext (TLS is not supported yet)", k, SentinelScheme)
		}
		if k != "sentinel" && len(v) > 1 {
			return ns, e.bad("option %q given twice", k)
		}
	}
	if ss.master == "" {
		return ns, e.bad("no master name: add ?sentinelMasterId=NAME (the name the sentinels monitor)")
	}
	if strings.ContainsAny(ss.master, " \r\n") {
		return ns, e.bad("sentinelMasterId %q has spaces or newlines", ss.master)
	}
	first, err := hostPortDefault(u.Host, DefaultSentinelPort)
	if err != nil {
		return ns, e.bad("sentinel %q: %v", u.Host, err)
	}
	ss.addrs = append(ss.addrs, first)
	for _, s := range q["sentinel"] {
		hp, err := hostPortDefault(s, DefaultSentinelPort)
		if err != nil {
			return ns, e.bad("sentinel %q: %v", s, err)
		}
		if slices.Contains(ss.addrs, hp) {
			return ns, e.bad("sentinel %s given twice", hp)
		}
		ss.addrs = append(ss.addrs, hp)
	}
	ss.username, ss.password = q.Get("sentinel_username"), q.Get("sentinel_password")
	if q.Has("sentinel_password") && ss.password == "" {
		return ns, e.bad("empty sentinel_password")
	}
	if ss.username != "" && ss.password == "" {
		return ns, e.bad("sentinel_username without sentinel_password")
	}
	if err := e.userinfo(u, SentinelScheme, &ns); err != nil {
		return ns, err
	}
	// db, protocol and client_name, as a redis:// URL's
	rest := *u
	other := url.Values{}
	for k, v := range q {
		if !slices.Contains(sentinelOptions, k) {
			other[k] = v
		}
	}
	rest.RawQuery = other.Encode()
	if _, err := e.options(&rest, &ns); err != nil {
		return ns, err
	}
	ns.sentinel = ss
	ns.host, ns.port = "", 0 // the primary's, learned at every dial
	// what the sentinels' answers are cleaned of
	ss.secrets = ns.secrets()
	ns.display = sentinelDisplay(u, ns, ss, strings.Trim(u.Path, "/") != "" || q.Has("db"))
	return ns, nil
}

// sentinelKnown lists the options a redis-sentinel:// URL takes.
func sentinelKnown() []string {
	var out []string
	for _, k := range append(slices.Clone(sentinelOptions), urlOptions...) {
		if !slices.Contains(urlTLSOptions, k) {
			out = append(out, k)
		}
	}
	return out
}

// hostPortDefault checks a sentinel's or a cluster seed's address,
// host[:port] (default port def), and returns it as host:port.
func hostPortDefault(s string, def int) (string, error) {
	if s == "" {
		return "", errBadAddr("empty address")
	}
	host, port := s, strconv.Itoa(def)
	if h, p, err := net.SplitHostPort(s); err == nil {
		host, port = h, p
	} else if strings.Contains(s, ":") && !strings.HasPrefix(s, "[") && strings.Count(s, ":") == 1 {
		return "", errBadAddr("bad port")
	}
	host = strings.Trim(host, "[]")
	if host == "" {
		host = "127.0.0.1"
	}
	n, err := strconv.Atoi(port)
	if err != nil || n <= 0 || n > 65535 {
		return "", errBadAddr("bad port")
	}
	if strings.ContainsAny(host, "/?#@ ,") {
		return "", errBadAddr("bad host")
	}
	return net.JoinHostPort(host, port), nil
}

type errBadAddr string

func (e errBadAddr) Error() string { return string(e) }

// sentinelDisplay is a Sentinel node's printable address: its user
// (password as ***), its sentinels, db and master name; never the
// sentinels' password.
func sentinelDisplay(u *url.URL, ns nodeSpec, ss *sentinelSpec, db bool) string {
	var b strings.Builder
	b.WriteString(SentinelScheme + "://")
	if u.User != nil {
		b.WriteString(u.User.Username() + ":***@")
	}
	b.WriteString(ss.addrs[0])
	if db {
		b.WriteString("/" + strconv.Itoa(ns.db))
	}
	b.WriteString("?sentinelMasterId=" + url.QueryEscape(ss.master))
	for _, a := range ss.addrs[1:] {
		b.WriteString("&sentinel=" + a)
	}
	return b.String()
}

// SentinelAddr is a Sentinel-managed node as ParseAddr resolves it: the
// primary's address is not known until the sentinels are asked (mux asks
// them at every dial).
type SentinelAddr struct {
	MasterName string
	Sentinels  []string // host:port
	// Username and Password are the sentinels' own (sentinel_username,
	// sentinel_password); NodeAddr's are the primary's.
	Username, Password string
}
