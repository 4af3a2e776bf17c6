package nodeaddr

import (
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
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

// parseSentinel fills ns, a redis-sentinel:// node, from u (the URL a,
// parsed; its password already checked) and returns it.
func (e addrErr) parseSentinel(ns Node, u *url.URL, a string, cfg *Defaults) (Node, error) {
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
	ss := &Sentinel{MasterName: q.Get("sentinelMasterId")}
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
	if ss.MasterName == "" {
		return ns, e.bad("no master name: add ?sentinelMasterId=NAME (the name the sentinels monitor)")
	}
	if strings.ContainsAny(ss.MasterName, " \r\n") {
		return ns, e.bad("sentinelMasterId %q has spaces or newlines", ss.MasterName)
	}
	first, err := hostPortDefault(u.Host, DefaultSentinelPort)
	if err != nil {
		return ns, e.bad("sentinel %q: %v", u.Host, err)
	}
	ss.Sentinels = append(ss.Sentinels, first)
	for _, s := range q["sentinel"] {
		hp, err := hostPortDefault(s, DefaultSentinelPort)
		if err != nil {
			return ns, e.bad("sentinel %q: %v", s, err)
		}
		if slices.Contains(ss.Sentinels, hp) {
			return ns, e.bad("sentinel %s given twice", hp)
		}
		ss.Sentinels = append(ss.Sentinels, hp)
	}
	ss.Username, ss.Password = q.Get("sentinel_username"), q.Get("sentinel_password")
	if q.Has("sentinel_password") && ss.Password == "" {
		return ns, e.bad("empty sentinel_password")
	}
	if ss.Username != "" && ss.Password == "" {
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
	ns.Sentinel = ss
	ns.Host, ns.Port = "", 0 // the primary's, learned at every dial
	ns.Display = sentinelDisplay(u, ns, ss, strings.Trim(u.Path, "/") != "" || q.Has("db"))
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
func sentinelDisplay(u *url.URL, ns Node, ss *Sentinel, db bool) string {
	var b strings.Builder
	b.WriteString(SentinelScheme + "://")
	if u.User != nil {
		b.WriteString(u.User.Username() + ":***@")
	}
	b.WriteString(ss.Sentinels[0])
	if db {
		b.WriteString("/" + strconv.Itoa(ns.DB))
	}
	b.WriteString("?sentinelMasterId=" + url.QueryEscape(ss.MasterName))
	for _, a := range ss.Sentinels[1:] {
		b.WriteString("&sentinel=" + a)
	}
	return b.String()
}

// Sentinel is a Sentinel-managed node: the primary's address is not known
// until the sentinels are asked (mux asks them at every dial).
type Sentinel struct {
	MasterName string   // the service the sentinels monitor (sentinelMasterId)
	Sentinels  []string // host:port of every sentinel, in the URL's order
	// Username and Password are the sentinels' own (sentinel_username,
	// sentinel_password); Node's are the primary's.
	Username, Password string
}
