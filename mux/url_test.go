package mux

import (
	"errors"
	"strings"
	"testing"

	"github.com/redmux/redmux/internal/nodeaddr"
	"github.com/redmux/redmux/internal/redisproc/redistest"
)

func TestParseAddrErrors(t *testing.T) {
	const pw = "Sup3rSecret"
	cases := []struct{ addr, want string }{
		{"h", "want host:port"},
		{"h:0", "bad port"},
		{"http://h:1", "scheme"},
		{"redis://h:99999", "bad port"},
		{"redis://:" + pw + "@h:99999", "bad port"},
		{"redis://user@h:1", "user without password"},
		{"redis://user:@h:1", "empty password"},
		{"redis://:" + pw + "@h:1/x", "want /db"},
		{"redis://:" + pw + "@h:1?tls=1", "unknown option"},
		{"redis://:" + pw + "@h:1?cacert=/x", "needs rediss://"},
		{"redis://:" + pw + "@h:1?db=2&db=3", "given twice"},
		{"redis://:" + pw + "@h:1/2?db=3", "disagree"},
		{"redis://:" + pw + "@h:1?protocol=4", "protocol"},
		{"rediss://:" + pw + "@h:1?cert=/x", "go together"},
		{"rediss://:" + pw + "@h:1?cacert=/nonexistent/ca.crt", "cacert"},
		{"rediss://:" + pw + "@h:1?skip_verify=maybe", "skip_verify"},
		{"rediss://:" + pw + "@h:1?min_version=1.1", "min_version"},
		{"redis://:" + pw + "@h:1?client_name=a%20b", "spaces"},
		// An unescaped '/' or '#' in the password: the parser would take
		// part of it for the path; the error must not show any of it.
		{"redis://:Sup3r/Secret@h:1", "malformed URL"},
		{"redis://:Sup3r#Secret@h:1", "malformed URL"},
		{"redis://:Sup3r%zzSecret@h:1", "escape special characters of the password"},
		// A fault outside the user information gets no hint about the
		// password: the parser's own words, about the stand-in.
		{"redis://:Sup3r$$Secret@h:xyz", `invalid port ":xyz" after host`},
		{"redis://alice:Sup3r$$Secret@[::1:6379", "missing ']' in host"},
		{"redis://al%zz:Sup3rSecret@h:1", "escape special characters of the user name"},
		{"redis://Sup3rSecret@127.0.0.1:1", "user without password"}, // the password typed where the user goes
		// A password of digits, then an unescaped '/' or '?': the URL would
		// parse with the rest in its path or query.
		{"redis://:12/Secret@h:1", "malformed URL"},
		{"redis://:12?db=Secret@h:1", "malformed URL"},
		{"redis://:2024#Secret@h:1", "malformed URL"},
		// a host:port with a password typed in (no URL)
		{":Sup3rSecret@127.0.0.1:6380", "want host:port"},
		{"app:Sup3rSecret@127.0.0.1:6380", "want host:port"},
		// a Sentinel node's URL is refused before anything is dialled
		{"redis-sentinel://:Sup3rSecret@s1?sentinelMasterId=m&bogus=1", `unknown option "bogus"`},
	}
	for _, c := range cases {
		_, err := New(Config{Addrs: []string{c.addr}})
		if err == nil {
			t.Errorf("%s: no error", c.addr)
			continue
		}
		msg := err.Error()
		if !errors.Is(err, ErrConfig) || !strings.Contains(msg, c.want) {
			t.Errorf("%s: %v (want %q)", c.addr, err, c.want)
		}
		for _, part := range []string{pw, "Sup3r", "Secret"} {
			if strings.Contains(msg, part) {
				t.Errorf("%s: password in error: %v", c.addr, err)
			}
		}
	}
}

// TestURLClient runs a client whose nodes are given as redis:// URLs with
// a password against real servers: the URL's password and db are used,
// and neither errors nor Addrs show the password.
func TestURLClient(t *testing.T) {
	const pw = "url-pass-word"
	srv := redistest.StartN(t, 3, redistest.Options{Password: pw})
	var addrs []string
	for _, s := range srv {
		addrs = append(addrs, "redis://:"+pw+"@"+s.Addr+"/5")
	}
	c := newTestClient(t, addrs, nil)
	testAllReplies(t, c)
	for i, a := range c.Addrs() {
		if a != "redis://:***@"+srv[i].Addr+"/5" {
			t.Errorf("Addrs()[%d] = %q", i, a)
		}
	}
	if _, ok := c.drv.(*netDriver); ok && !portable {
		t.Error("a plaintext client runs on the net.Conn driver")
	}
	srv[0].Stop()
	waitNodeDown(t, c, 0)
	if msg := c.NodeErr(0).Error(); strings.Contains(msg, pw) || !strings.Contains(msg, "redis://:***@") {
		t.Fatalf("NodeErr: %q", msg)
	}
}

// TestDistinctAddrs (issue 46): a list in which two entries reach one
// server is refused by New and CheckDistinct, after normalisation; lists
// of distinct servers are accepted. No password reaches the error.
func TestDistinctAddrs(t *testing.T) {
	for _, addrs := range [][]string{
		{"127.0.0.1:7000", "127.0.0.1:7001", "127.0.0.1:7000"},
		{"127.0.0.1:7000", "localhost:7000"},
		{"redis://:s3cret@127.0.0.1:7000/1", "127.0.0.1:7000"},
		{"redis://h.example", "H.EXAMPLE.:6379"},
		{"[::1]:7000", "[0:0::1]:7000"},
		{"[::ffff:127.0.0.1]:7000", "127.0.0.1:7000"},
		{"redis-cluster://127.0.0.1:7000?seed=127.0.0.1:7001", "127.0.0.1:7001"},
		{"redis-cluster://127.0.0.1:7000", "redis-cluster://127.0.0.1:7002?seed=127.0.0.1:7000"},
		{"redis-sentinel://127.0.0.1:26379?sentinelMasterId=m&sentinel=127.0.0.1:26380", "redis-sentinel://127.0.0.1:26380?sentinelMasterId=m"},
	} {
		err := nodeaddr.CheckDistinct(addrs, nodeaddr.Defaults{})
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "are one server") {
			t.Errorf("%q: %v, want one server refused", addrs, err)
			continue
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%q: the password in %v", addrs, err)
		}
		if _, err := New(Config{Addrs: addrs}); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "are one server") {
			t.Errorf("New(%q): %v, want one server refused", addrs, err)
		}
	}
	for _, addrs := range [][]string{
		{"127.0.0.1:7000", "127.0.0.1:7001", "127.0.0.1:7002"},
		{"127.0.0.1:7000", "[::1]:7000", "127.0.0.2:7000"},
		{"redis-sentinel://127.0.0.1:26379?sentinelMasterId=a", "redis-sentinel://127.0.0.1:26379?sentinelMasterId=b"},
		{"redis-sentinel://127.0.0.1:26379?sentinelMasterId=a", "127.0.0.1:26379"},
		{"redis-cluster://127.0.0.1:7000", "redis-cluster://127.0.0.1:7100"},
	} {
		if err := nodeaddr.CheckDistinct(addrs, nodeaddr.Defaults{}); err != nil {
			t.Errorf("%q: %v", addrs, err)
		}
	}
}
