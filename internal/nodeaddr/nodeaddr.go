package nodeaddr

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Node is one node address resolved (from a host:port or a redis:// /
// rediss:// / redis-sentinel:// / redis-cluster:// URL), with what the URL
// or the Defaults say about credentials, database, protocol and TLS.
type Node struct {
	Host    string // "" for a Sentinel or a Cluster node
	Port    int
	Display string // the address as printed: the URL with its password as ***
	// Username and Password are the node's own (for a Sentinel node, its
	// primary's; Sentinel has the sentinels')
	Username, Password string
	DB                 int
	RESP3              bool
	ClientName         string
	TLS                *tls.Config // nil: plaintext
	// Sentinel is set for a Sentinel-managed node (redis-sentinel://); Host
	// and Port are then empty, the primary's being asked of the sentinels
	// at every dial (mux/sentinel.go).
	Sentinel *Sentinel
	// Cluster is set for a Redis Cluster node (redis-cluster://); Host and
	// Port are then empty, each command going to the primary of its key's
	// slot (mux/cluster.go).
	Cluster *Cluster
}

// Addr is the node's host:port to dial ("" for a Sentinel or a Cluster
// node).
func (n *Node) Addr() string {
	if n.Sentinel != nil || n.Cluster != nil {
		return ""
	}
	return net.JoinHostPort(n.Host, strconv.Itoa(n.Port))
}

// Defaults are the settings a node's URL may override (mux.Config's fields
// of the same names).
type Defaults struct {
	Username, Password string
	DB                 int
	RESP3              bool
	ClientName         string
	TLS                *tls.Config
}

// ErrConfig is wrapped by every error of Parse and CheckDistinct; mux's
// ErrConfig is this value.
var ErrConfig = errors.New("mux: bad config")

// DefaultPort is the port of a redis:// or rediss:// URL that names none.
const DefaultPort = 6379

// urlOptions are the query parameters a node URL accepts. db, protocol,
// client_name and skip_verify are go-redis's (redis.ParseURL); cacert,
// cert, key, sni and insecure are redis-cli's TLS flags (--cacert, --cert,
// --key, --sni, --insecure); min_version is ours (1.2 or 1.3).
var urlOptions = []string{"db", "protocol", "client_name", "skip_verify", "insecure", "cacert", "cert", "key", "sni", "min_version"}

// RedactURL returns addr with the password of a URL's user information
// replaced by *** (user:*** for user:password, *** for a user information
// without a colon, which is often a password typed without it), and its
// query left out. Anything that is not a URL is
// returned as it is, but for what precedes an '@' (no host:port holds one:
// a password typed in, ":secret@host:port"), shown as ***. It works on
// malformed URLs too, so that an error about one never shows its password.
func RedactURL(addr string) string {
	i := strings.Index(addr, "://")
	if i < 0 {
		if at := strings.LastIndexByte(addr, '@'); at >= 0 {
			return "***" + addr[at:]
		}
		return addr
	}
	rest := addr[i+3:]
	if at := userinfoAt(addr); at >= 0 {
		at -= i + 3
		user := rest[:at]
		if c := strings.Index(user, ":"); c >= 0 {
			user = user[:c] + ":***"
		} else if user != "" {
			// redis://secret@host: a password typed without its
			// colon (Parse rejects the URL); never print it
			user = "***"
		}
		tail := rest[at+1:]
		if q := strings.IndexAny(tail, "?#"); q >= 0 {
			tail = tail[:q]
		}
		return addr[:i+3] + user + "@" + tail
	}
	if q := strings.IndexAny(rest, "?#"); q >= 0 {
		rest = rest[:q]
	}
	return addr[:i+3] + rest
}

// userinfoAt returns the index in URL a of the '@' that ends its user
// information, or -1 if it has none. A password may hold any character
// ('/', '?' and '#' included) when it was not escaped, so that is the
// last '@' of a, unless the URL parses with every '@' past its host in
// the values of options where an '@' is at home (client_name,
// sentinel_password, a file's path...; queryAt): then the user
// information, if any, ends where the parser found it, before the path
// and query. What stays ambiguous is a password of digits, an unescaped
// '?' and such an option ("redis://:12?client_name=a@h"): it is taken
// for a port and a query.
func userinfoAt(a string) int {
	i := strings.Index(a, "://")
	if i < 0 {
		return -1
	}
	at := strings.LastIndex(a, "@")
	if at < i+3 {
		return -1
	}
	end := strings.IndexAny(a[i+3:], "/?#") + i + 3
	if end < i+3 || end > at || !queryAt(a) {
		return at
	}
	if at = strings.LastIndex(a[:end], "@"); at < i+3 {
		return -1
	}
	return at
}

// atOptions are the options whose values may hold an unescaped '@'.
var atOptions = []string{"client_name", "cacert", "cert", "key", "sentinelMasterId", "sentinel_username", "sentinel_password"}

// queryAt reports whether a parses as a URL with no fragment, no path but
// a database number, and an '@' past its host only in the values of
// atOptions (never in an option's name, nor in another option's value).
func queryAt(a string) bool {
	if strings.Contains(a, "#") {
		return false
	}
	u, err := url.Parse(a)
	if err != nil || strings.Contains(u.Host, "@") {
		return false
	}
	if p := strings.TrimPrefix(u.Path, "/"); strings.Trim(p, "0123456789") != "" {
		return false
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return false
	}
	for k, vs := range q {
		// an option no node URL accepts (go-redis's dial_timeout) is
		// still an option: Parse refuses it, but where the password ends
		// must not depend on it (issue 46); an '@' in a key is not one
		if strings.Contains(k, "@") {
			return false
		}
		for _, v := range vs {
			if strings.Contains(v, "@") && !slices.Contains(atOptions, k) {
				return false
			}
		}
	}
	return true
}

// Parse resolves address a, entry i of a list (mux.Config.Addrs; i < 0:
// not in a list), with d's settings as defaults (a URL's own values win),
// as mux.New does. Errors wrap ErrConfig and never contain the password.
func Parse(i int, a string, d Defaults) (Node, error) {
	cfg := &d
	ns := Node{
		Username: d.Username, Password: d.Password, DB: d.DB,
		RESP3: d.RESP3, ClientName: d.ClientName,
	}
	e := addrErr{i, a}
	if !strings.Contains(a, "://") {
		return parseHostPort(ns, a, cfg, e)
	}
	u, err := url.Parse(a)
	if err != nil {
		return ns, e.parseFailed(err)
	}
	if raw := urlPassword(a); raw != "" {
		// The parser must have seen the same password we would redact;
		// an unescaped '/', '?' or '#' in it makes part of it the path.
		pw, ok := "", false
		if u.User != nil {
			pw, ok = u.User.Password()
		}
		if want, err := url.PathUnescape(raw); !ok || err != nil || pw != want {
			return ns, e.bad("malformed URL (escape special characters of the password with %%XX)")
		}
	}
	var secure bool
	switch u.Scheme {
	case "redis":
	case "rediss":
		secure = true
	case SentinelScheme:
		return e.parseSentinel(ns, u, a, cfg)
	case ClusterScheme:
		return e.parseCluster(ns, u, cfg)
	default:
		return ns, e.bad("scheme %q, want redis, rediss, %s or %s", u.Scheme, SentinelScheme, ClusterScheme)
	}
	if u.Opaque != "" {
		return ns, e.bad("want redis://host:port")
	}
	ns.Host = u.Hostname()
	if ns.Host == "" {
		ns.Host = "127.0.0.1"
	}
	ns.Port = DefaultPort
	if p := u.Port(); p != "" {
		ns.Port, err = strconv.Atoi(p)
		if err != nil || ns.Port <= 0 || ns.Port > 65535 {
			return ns, e.bad("bad port")
		}
	}
	if err := e.userinfo(u, "redis", &ns); err != nil {
		return ns, err
	}
	q, err := e.options(u, &ns)
	if err != nil {
		return ns, err
	}
	if !secure && cfg.TLS != nil {
		// Config.TLS asks for TLS everywhere; a plaintext scheme is a
		// contradiction, not something to settle silently either way.
		return ns, e.bad("redis:// is plaintext but Config.TLS is set: write rediss://, or host:port")
	}
	if !secure {
		for _, k := range urlTLSOptions {
			if q.Has(k) {
				return ns, e.bad("option %q needs rediss:// (TLS)", k)
			}
		}
		ns.Display = RedactURL(a)
		return ns, nil
	}
	if ns.TLS, err = e.tlsOptions(q, cfg.TLS, ns.Host); err != nil {
		return ns, err
	}
	ns.Display = RedactURL(a)
	return ns, nil
}

// userinfo applies u's user information (the node's credentials) to ns.
// A user without a password is refused: the Redis URI scheme has none
// there, and our Config has no user without a password.
func (e addrErr) userinfo(u *url.URL, scheme string, ns *Node) error {
	if u.User == nil {
		return nil
	}
	pw, ok := u.User.Password()
	switch {
	case ok && pw == "":
		return e.bad("empty password")
	case ok:
		ns.Username, ns.Password = u.User.Username(), pw
		return nil
	}
	return e.bad("user without password (write %s://user:password@host, or :password@ for the default user)", scheme)
}

// addrErr words the errors of address i (-1: not in a list), a.
type addrErr struct {
	i int
	a string
}

func (e addrErr) bad(format string, args ...any) error {
	if e.i < 0 {
		return fmt.Errorf("%w: address %q: %s", ErrConfig, RedactURL(e.a), fmt.Sprintf(format, args...))
	}
	return fmt.Errorf("%w: address %d %q: %s", ErrConfig, e.i, RedactURL(e.a), fmt.Sprintf(format, args...))
}

// parseHostPort parses a host:port address (no URL).
func parseHostPort(ns Node, a string, cfg *Defaults, e addrErr) (Node, error) {
	h, p, err := net.SplitHostPort(a)
	if err != nil {
		return ns, e.bad("want host:port or a redis:// or rediss:// URL")
	}
	port, err := strconv.Atoi(p)
	if err != nil || port <= 0 || port > 65535 {
		return ns, e.bad("bad port")
	}
	if h == "" {
		h = "127.0.0.1"
	}
	ns.Host, ns.Port, ns.Display = h, port, a
	if cfg.TLS != nil {
		ns.TLS = nodeTLS(cfg.TLS, h)
	}
	return ns, nil
}

// parseFailed words url.Parse's error err for the URL, never printing its
// password.
func (e addrErr) parseFailed(err error) error {
	a := e.a
	if urlPassword(a) == "" {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return e.bad("%v", err)
	}
	// The parser's text may quote part of the password: parse the URL
	// again with the password (then the user name) replaced, to tell
	// whether the fault is in them, and give the escaping hint only then;
	// else the fault elsewhere (a bad port, say), as the parser words it
	// about the stand-in.
	_, perr := url.Parse(withUserinfo(a, false))
	if perr == nil {
		return e.bad("malformed URL (escape special characters of the password with %%XX)")
	}
	if _, uerr := url.Parse(withUserinfo(a, true)); uerr == nil {
		return e.bad("malformed URL (escape special characters of the user name with %%XX)")
	}
	var ue *url.Error
	if errors.As(perr, &ue) {
		perr = ue.Err
	}
	raw := urlPassword(a)
	if _, uerr := url.PathUnescape(raw); uerr != nil || strings.ContainsAny(raw, "/?#") {
		// Two faults: say both.
		return e.bad("%v; and escape special characters of the password with %%XX", perr)
	}
	return e.bad("%v", perr)
}

// options applies the URL's path (/db) and its query options but the TLS
// ones to ns, and returns the query.
func (e addrErr) options(u *url.URL, ns *Node) (url.Values, error) {
	path := strings.TrimPrefix(u.Path, "/")
	if path != "" {
		db, err := strconv.Atoi(path)
		if err != nil || db < 0 {
			return nil, e.bad("path %q: want /db (a database number)", "/"+path)
		}
		ns.DB = db
	}
	q := u.Query()
	for k := range q {
		if !slices.Contains(urlOptions, k) {
			return nil, e.bad("unknown option %q (known: %s)", k, strings.Join(urlOptions, ", "))
		}
		if len(q[k]) > 1 {
			return nil, e.bad("option %q given twice", k)
		}
	}
	if v := q.Get("db"); v != "" {
		db, err := strconv.Atoi(v)
		if err != nil || db < 0 {
			return nil, e.bad("db=%q: want a database number", v)
		}
		if path != "" && db != ns.DB {
			return nil, e.bad("db=%s and path /%s disagree", v, path)
		}
		ns.DB = db
	}
	switch v := q.Get("protocol"); v {
	case "":
	case "2":
		ns.RESP3 = false
	case "3":
		ns.RESP3 = true
	default:
		return nil, e.bad("protocol=%q: want 2 or 3", v)
	}
	if v := q.Get("client_name"); v != "" {
		ns.ClientName = v
	}
	return q, nil
}

// urlPassword returns the password in a URL's user information, found
// without parsing (for scrubbing error texts of a URL that does not parse).
func urlPassword(a string) string {
	at := userinfoAt(a)
	if at < 0 {
		return ""
	}
	user := a[strings.Index(a, "://")+3 : at]
	if c := strings.Index(user, ":"); c >= 0 {
		return user[c+1:]
	}
	return ""
}

// withUserinfo returns URL a with its password (found as urlPassword
// finds it) replaced by "x", and with user also its user name by "u", so
// that a parse error of the result is not in them and quotes neither.
func withUserinfo(a string, user bool) string {
	i := strings.Index(a, "://")
	at := userinfoAt(a)
	if at < 0 {
		return a
	}
	c := strings.Index(a[i+3:at], ":")
	if c < 0 {
		return a
	}
	if user {
		return a[:i+3] + "u:x" + a[at:]
	}
	return a[:i+3+c+1] + "x" + a[at:]
}

// URLPassword returns the password of a redis:// or rediss:// URL's user
// information ("" if none), found without parsing, so that callers can
// scrub it from texts of their own.
func URLPassword(addr string) string {
	pw := urlPassword(addr)
	if u, err := url.PathUnescape(pw); err == nil {
		return u
	}
	return pw
}
