package redlock

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// NodeAddr is one node's address as New and redmux-bench take it: either
// host:port, or a URL redis://[[user]:password@]host:port[/db]. The
// password is kept for AUTH and never printed: String redacts it.
type NodeAddr struct {
	Addr     string // host:port
	Username string // ACL user; "" for the default user
	Password string // "" for none
	DB       int    // SELECT db; 0 by default
	URL      bool   // given as a URL
}

// String returns the address with the password replaced by "xxxxx".
func (a NodeAddr) String() string {
	if !a.URL {
		return a.Addr
	}
	var b strings.Builder
	b.WriteString("redis://")
	if a.Username != "" || a.Password != "" {
		b.WriteString(url.PathEscape(a.Username))
		if a.Password != "" {
			b.WriteString(":xxxxx")
		}
		b.WriteString("@")
	}
	b.WriteString(a.Addr)
	if a.DB != 0 {
		b.WriteString("/")
		b.WriteString(strconv.Itoa(a.DB))
	}
	return b.String()
}

// ParseAddr parses a node address: host:port, or
// redis://[[user]:password@]host:port[/db] (port default 6379). rediss://
// (TLS) is refused until mux has a TLS transport. Errors name the address
// with its password redacted, never the password.
func ParseAddr(s string) (NodeAddr, error) {
	if !strings.Contains(s, "://") {
		if _, port, err := net.SplitHostPort(s); err != nil || port == "" {
			return NodeAddr{}, fmt.Errorf("%w: address %q: want host:port or redis://[[user]:password@]host:port[/db]", ErrBadOption, s)
		}
		return NodeAddr{Addr: s}, nil
	}
	shown := redactURL(s)
	u, err := url.Parse(s)
	if err != nil {
		return NodeAddr{}, fmt.Errorf("%w: address %s: not a valid URL", ErrBadOption, shown)
	}
	switch u.Scheme {
	case "redis":
	case "rediss":
		return NodeAddr{}, fmt.Errorf("%w: address %s: rediss:// (TLS) is not supported yet: mux has no TLS transport", ErrBadOption, shown)
	default:
		return NodeAddr{}, fmt.Errorf("%w: address %s: scheme %q, want redis://", ErrBadOption, shown, u.Scheme)
	}
	if u.Opaque != "" || u.RawQuery != "" || u.Fragment != "" || u.Host == "" {
		return NodeAddr{}, fmt.Errorf("%w: address %s: want redis://[[user]:password@]host:port[/db]", ErrBadOption, shown)
	}
	a := NodeAddr{URL: true}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "6379"
	}
	if host == "" || (strings.Contains(host, ":") && !strings.HasPrefix(u.Host, "[")) {
		return NodeAddr{}, fmt.Errorf("%w: address %s: no host, or an IPv6 host without brackets", ErrBadOption, shown)
	}
	if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > 65535 {
		return NodeAddr{}, fmt.Errorf("%w: address %s: bad port", ErrBadOption, shown)
	}
	a.Addr = net.JoinHostPort(host, port)
	if u.User != nil {
		a.Username = u.User.Username()
		a.Password, _ = u.User.Password()
		if a.Password == "" { // redis://secret@host: the password alone, as redis-cli reads it
			a.Username, a.Password = "", a.Username
		}
	}
	if db := strings.TrimPrefix(u.Path, "/"); db != "" {
		n, err := strconv.Atoi(db)
		if err != nil || n < 0 {
			return NodeAddr{}, fmt.Errorf("%w: address %s: database %q is not a non-negative number", ErrBadOption, shown, db)
		}
		a.DB = n
	}
	return a, nil
}

// redactURL hides the userinfo's password of a URL that may not parse.
func redactURL(s string) string {
	i := strings.Index(s, "://")
	rest := s[i+3:]
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return strconv.Quote(s)
	}
	user := rest[:at]
	if c := strings.IndexByte(user, ':'); c >= 0 {
		user = user[:c] + ":xxxxx"
	} else {
		user = "xxxxx" // the password alone
	}
	return strconv.Quote(s[:i+3] + user + rest[at:])
}

// parseAddrs parses New's addresses into mux's host:port list and the
// credentials and database they carry. mux has one set of credentials and
// one database for all nodes: URLs that differ in them are refused.
func parseAddrs(addrs []string) (hostports []string, first NodeAddr, err error) {
	hostports = make([]string, len(addrs))
	seen := false
	for i, s := range addrs {
		a, err := ParseAddr(s)
		if err != nil {
			return nil, NodeAddr{}, err
		}
		hostports[i] = a.Addr
		if !a.URL {
			continue
		}
		if !seen {
			first, seen = a, true
			continue
		}
		if a.Username != first.Username || a.Password != first.Password || a.DB != first.DB {
			return nil, NodeAddr{}, fmt.Errorf("%w: address %s: credentials or database differ from %s (one set for all nodes)", ErrBadOption, a, first)
		}
	}
	return hostports, first, nil
}
