package mux

import (
	"crypto/tls"
	"errors"
	"strings"
	"testing"

	"github.com/redmux/redmux/internal/redisproc"
	"github.com/redmux/redmux/internal/redisproc/redistest"
)

func TestParseAddr(t *testing.T) {
	files, err := redisproc.WriteCerts(t.TempDir(), redisproc.CertOptions{})
	if err != nil {
		t.Fatal(err)
	}
	base := Config{Username: "u0", Password: "p0", DB: 1, ClientName: "base"}
	cases := []struct {
		addr    string
		host    string
		port    int
		user    string
		pass    string
		db      int
		resp3   bool
		name    string
		tls     bool
		sni     string
		skip    bool
		display string
	}{
		{addr: "10.0.0.1:7000", host: "10.0.0.1", port: 7000, user: "u0", pass: "p0", db: 1, name: "base", display: "10.0.0.1:7000"},
		{addr: ":7000", host: "127.0.0.1", port: 7000, user: "u0", pass: "p0", db: 1, name: "base", display: ":7000"},
		{addr: "redis://h.example:7001", host: "h.example", port: 7001, user: "u0", pass: "p0", db: 1, name: "base", display: "redis://h.example:7001"},
		{addr: "redis://h.example", host: "h.example", port: DefaultPort, user: "u0", pass: "p0", db: 1, name: "base", display: "redis://h.example"},
		{addr: "redis://:pw@h:7002/3", host: "h", port: 7002, user: "", pass: "pw", db: 3, name: "base", display: "redis://:***@h:7002/3"},
		{addr: "redis://alice:a%2Fb%40c@h:7003/0?protocol=3&client_name=x", host: "h", port: 7003, user: "alice", pass: "a/b@c", db: 0, resp3: true, name: "x", display: "redis://alice:***@h:7003/0"},
		{addr: "redis://[::1]:7004?db=4", host: "::1", port: 7004, user: "u0", pass: "p0", db: 4, name: "base", display: "redis://[::1]:7004"},
		{addr: "rediss://h.example:7005", host: "h.example", port: 7005, user: "u0", pass: "p0", db: 1, name: "base", tls: true, sni: "h.example", display: "rediss://h.example:7005"},
		{addr: "rediss://:pw@10.1.1.1:7006?sni=redis.example&skip_verify=true&min_version=1.3&cacert=" + files.CAFile + "&cert=" + files.ClientCertFile + "&key=" + files.ClientKeyFile,
			host: "10.1.1.1", port: 7006, pass: "pw", db: 1, name: "base", tls: true, sni: "redis.example", skip: true, display: "rediss://:***@10.1.1.1:7006"},
		{addr: "rediss://h:7007?insecure=1", host: "h", port: 7007, user: "u0", pass: "p0", db: 1, name: "base", tls: true, sni: "h", skip: true, display: "rediss://h:7007"},
		// an '@' in the query is not the end of a user information
		{addr: "redis://h:7008/0?client_name=svc@host1", host: "h", port: 7008, user: "u0", pass: "p0", db: 0, name: "svc@host1", display: "redis://h:7008/0"},
		{addr: "redis://bob:pw@h:7009?client_name=svc@host1", host: "h", port: 7009, user: "bob", pass: "pw", db: 1, name: "svc@host1", display: "redis://bob:***@h:7009"},
	}
	for _, c := range cases {
		ns, err := parseAddr(0, c.addr, &base)
		if err != nil {
			t.Errorf("%s: %v", c.addr, err)
			continue
		}
		if ns.host != c.host || ns.port != c.port || ns.username != c.user || ns.password != c.pass ||
			ns.db != c.db || ns.resp3 != c.resp3 || ns.clientName != c.name || ns.display != c.display || (ns.tls != nil) != c.tls {
			t.Errorf("%s: got %+v", c.addr, ns)
			continue
		}
		if ns.tls != nil {
			if ns.tls.ServerName != c.sni || ns.tls.InsecureSkipVerify != c.skip || ns.tls.MinVersion < tls.VersionTLS12 {
				t.Errorf("%s: tls ServerName %q skip %v min %x", c.addr, ns.tls.ServerName, ns.tls.InsecureSkipVerify, ns.tls.MinVersion)
			}
		}
	}
	// A Config.TLS makes plain host:port nodes TLS ones, with the node's
	// host as ServerName and without touching the caller's config.
	mine := &tls.Config{}
	ns, err := parseAddr(0, "db1.example:7000", &Config{TLS: mine})
	if err != nil || ns.tls == nil || ns.tls.ServerName != "db1.example" || ns.tls.InsecureSkipVerify || mine.ServerName != "" {
		t.Fatalf("Config.TLS: %+v %v", ns, err)
	}
	if ns.tls.MinVersion != tls.VersionTLS12 {
		t.Fatalf("default MinVersion %x", ns.tls.MinVersion)
	}
	if _, err := parseAddr(0, "redis://db1.example:7000", &Config{TLS: mine}); err == nil || !strings.Contains(err.Error(), "write rediss://") {
		t.Fatalf("redis:// with Config.TLS: %v", err)
	}
}

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

func TestRedactURL(t *testing.T) {
	cases := map[string]string{
		"127.0.0.1:6000":                    "127.0.0.1:6000",
		"redis://h:1":                       "redis://h:1",
		"redis://:pw@h:1/2?cacert=/a/b.crt": "redis://:***@h:1/2",
		"rediss://alice:pw@h:1":             "rediss://alice:***@h:1",
		"rediss://alice@h:1":                "rediss://***@h:1",
		"redis://Sup3rSecret@h:1/0":         "redis://***@h:1/0",
		"redis://:p/w?x#y@h:1/0":            "redis://:***@h:1/0",
		"redis://:p@ss@h:1":                 "redis://:***@h:1",
		"redis://u:12/ab@h:1":               "redis://u:***@h:1",
		"redis://u:12?db=ab@h:1":            "redis://u:***@h:1",
		"redis://u:2024#Summer@h:1":         "redis://u:***@h:1",
		"redis://u:pw@h:1?client_name=a@b":  "redis://u:***@h:1",
		"redis://h:1/0?client_name=a@b":     "redis://h:1/0",
		"redis-sentinel://h:26379?sentinelMasterId=m&sentinel_password=Tr0@horse": "redis-sentinel://h:26379",
		":pw@127.0.0.1:6380": "***@127.0.0.1:6380",
	}
	for in, want := range cases {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
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
		err := CheckDistinct(addrs, Config{})
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
		if err := CheckDistinct(addrs, Config{}); err != nil {
			t.Errorf("%q: %v", addrs, err)
		}
	}
}
