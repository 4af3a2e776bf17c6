package nodeaddr

import (
	"net/url"
	"strings"
)

// URLSecrets returns the texts of node URL addr that are passwords: its
// user information's password and the value of every sentinel_password
// option, each as written and, where that differs, unescaped. It finds
// them without parsing (as RedactURL does), for callers that scrub texts
// of their own; nil for an address without any.
func URLSecrets(addr string) []string {
	var out []string
	add := func(raw string, unescape func(string) (string, error)) {
		if raw == "" {
			return
		}
		out = append(out, raw)
		if u, err := unescape(raw); err == nil && u != raw && u != "" {
			out = append(out, u)
		}
	}
	add(urlPassword(addr), url.PathUnescape)
	forSentinelPasswords(addr, func(_, _ int, v string) { add(v, url.QueryUnescape) })
	return out
}

// HideURLSecrets returns addr with every text URLSecrets finds replaced,
// in its place, by ***; the rest (options included) as given.
func HideURLSecrets(addr string) string {
	type span struct{ from, to int }
	var spans []span
	if at := userinfoAt(addr); at >= 0 {
		i := strings.Index(addr, "://") + 3
		if c := strings.Index(addr[i:at], ":"); c >= 0 {
			spans = append(spans, span{i + c + 1, at})
		}
	}
	forSentinelPasswords(addr, func(from, to int, _ string) { spans = append(spans, span{from, to}) })
	for k := len(spans) - 1; k >= 0; k-- { // in order, so from the end
		addr = addr[:spans[k].from] + "***" + addr[spans[k].to:]
	}
	return addr
}

// forSentinelPasswords calls f with the place (addr[from:to]) and text of
// every sentinel_password option value of URL addr's query, in order.
func forSentinelPasswords(addr string, f func(from, to int, v string)) {
	i := strings.Index(addr, "://")
	if i < 0 {
		return
	}
	start := i + 3
	if at := userinfoAt(addr); at >= 0 {
		start = at + 1
	}
	q := strings.IndexByte(addr[start:], '?')
	if q < 0 {
		return
	}
	// to the end: a '#' in a value is more likely an unescaped password
	// character than a fragment
	pos, end := start+q+1, len(addr)
	for pos <= end {
		next := strings.IndexByte(addr[pos:end], '&')
		if next < 0 {
			next = end - pos
		}
		pair := addr[pos : pos+next]
		if k, v, ok := strings.Cut(pair, "="); ok && v != "" {
			if key, err := url.QueryUnescape(k); err == nil && key == "sentinel_password" {
				f(pos+len(k)+1, pos+next, v)
			}
		}
		pos += next + 1
	}
}
