package bench

import (
	"net"
	"strconv"
	"strings"

	"github.com/redmux/redmux/internal/nodeaddr"
)

// splitNodes splits a -nodes list into its addresses. A comma separates
// two addresses, except inside the user information of a URL: a password
// may hold commas (RFC 3986 allows them unescaped there). A URL's user
// information runs to the last '@' before the next URL of the list (a
// comma followed by scheme://) or the end of the list, so
//
//	redis://:pa,ss@h1:6379,redis://:pw@h2:6379,h3:6379
//
// is three addresses, the first with the password "pa,ss". A comma
// anywhere else (in a URL's query, say) still splits: write it as %2C.
// An empty list gives one empty address, as strings.Split does.
func splitNodes(list string) []string {
	var out []string
	for {
		from := 0 // where this address's splitting comma may start
		if k := urlBody(list); k > 0 {
			next := nextURL(list, k)
			from = k
			if at := strings.LastIndexByte(list[k:next], '@'); at >= 0 {
				from = k + at + 1
			}
		}
		c := strings.IndexByte(list[from:], ',')
		if c < 0 {
			return append(out, list)
		}
		out = append(out, list[:from+c])
		list = list[from+c+1:]
	}
}

// urlBody returns the index just past "scheme://" when s starts (after
// blanks) with a URL scheme before its first comma, else 0.
func urlBody(s string) int {
	i := strings.Index(s, "://")
	if i <= 0 || strings.ContainsRune(s[:i], ',') || !isScheme(strings.TrimLeft(s[:i], " \t")) {
		return 0
	}
	return i + 3
}

// isScheme reports whether s is a URL scheme (RFC 3986: a letter, then
// letters, digits, '+', '-' or '.').
func isScheme(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		letter := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
		if !letter && (i == 0 || !(r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.')) {
			return false
		}
	}
	return true
}

// nextURL returns the index of the first comma at or after from that
// starts the next URL of the list (a comma followed by scheme://), or
// len(list).
func nextURL(list string, from int) int {
	for i := from; i < len(list); i++ {
		if list[i] == ',' && urlBody(list[i+1:]) > 0 {
			return i
		}
	}
	return len(list)
}

// authority returns the part of URL a between "://" and the first '/',
// '?' or '#' after its user information, and where it starts; ok is false
// when a is no URL.
func authority(a string) (auth string, start int, ok bool) {
	k := strings.Index(a, "://")
	if k < 0 {
		return "", 0, false
	}
	rest := a[k+3:]
	from := strings.LastIndexByte(rest, '@') + 1 // 0 without user information
	end := len(rest)
	if q := strings.IndexAny(rest[from:], "/?#"); q >= 0 {
		end = from + q
	}
	return rest[:end], k + 3, true
}

// suspectPort returns what follows the host in URL a that has no user
// information when it is not a port number (redis://:secret, left by a
// password whose '@host' part was lost, or a password written without
// it): text that may be a password and must never be printed. It is ""
// for anything else.
func suspectPort(a string) string {
	auth, _, ok := authority(a)
	if !ok || strings.Contains(auth, "@") {
		return ""
	}
	port := ""
	if strings.HasPrefix(auth, "[") {
		if e := strings.IndexByte(auth, ']'); e >= 0 {
			port = auth[e+1:]
		} else {
			port = auth
		}
	} else if c := strings.IndexByte(auth, ':'); c >= 0 {
		port = auth[c:]
	}
	p := strings.TrimPrefix(port, ":")
	if p == "" && port == "" || port != p && strings.Trim(p, "0123456789") == "" {
		return ""
	}
	return p
}

// shownNode is address a as errors quote it: a URL's user information
// and query as nodeaddr.RedactURL leaves them (password as ***, no query), a
// URL's suspect port (suspectPort) as ***, and the user information of
// a host:port that has one (no host holds an '@') as ***.
func shownNode(a string) string {
	if !strings.Contains(a, "://") {
		if at := strings.LastIndexByte(a, '@'); at >= 0 {
			return "***" + a[at:]
		}
		return a
	}
	if p := suspectPort(a); p != "" {
		auth, start, _ := authority(a)
		host := strings.TrimSuffix(auth, p)
		host = strings.TrimSuffix(host, ":")
		return nodeaddr.RedactURL(a[:start] + host + ":***" + a[start+len(auth):])
	}
	return nodeaddr.RedactURL(a)
}

// nodeSecrets returns the texts of address a that may be a password, for
// scrubbing messages: a URL's password and sentinel_password values
// (unescaped and as written, nodeaddr.URLSecrets), a suspect port
// (suspectPort), the user information of a host:port.
func nodeSecrets(a string) []string {
	out := nodeaddr.URLSecrets(a)
	if p := suspectPort(a); p != "" {
		out = append(out, p)
	}
	if !strings.Contains(a, "://") {
		if at := strings.LastIndexByte(a, '@'); at > 0 {
			out = append(out, a[:at])
		}
	}
	return out
}

// checkNode checks one -nodes address as parseNodes does; its error quotes
// the address as shownNode shows it.
func checkNode(a string) error {
	if strings.Contains(a, "://") {
		if suspectPort(a) != "" {
			return usagef("bad -nodes address %q: the port is not a number (a password goes before an '@': redis://[user]:password@host:port; escape special characters with %%XX)", shownNode(a))
		}
		if _, err := nodeaddr.Parse(-1, a, nodeaddr.Defaults{}); err != nil {
			return usagef("bad -nodes address: %v", err)
		}
		return nil
	}
	if strings.Contains(a, "@") {
		return usagef("bad -nodes address %q: want host:port, or a redis:// or rediss:// URL for a user and password (redis://[user]:password@host:port)", shownNode(a))
	}
	_, port, err := net.SplitHostPort(a)
	if err != nil || port == "" {
		return usagef("bad -nodes address %q: want host:port or a redis:// or rediss:// URL", a)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return usagef("bad -nodes address %q: the port must be 1..65535", a)
	}
	return nil
}
