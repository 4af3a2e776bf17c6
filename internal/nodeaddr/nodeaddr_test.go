package nodeaddr

import (
	"crypto/tls"
	"strings"
	"testing"

	"github.com/redmux/redmux/internal/redisproc"
)

func TestParse(t *testing.T) {
	files, err := redisproc.WriteCerts(t.TempDir(), redisproc.CertOptions{})
	if err != nil {
		t.Fatal(err)
	}
	base := Defaults{Username: "u0", Password: "p0", DB: 1, ClientName: "base"}
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
		ns, err := Parse(0, c.addr, base)
		if err != nil {
			t.Errorf("%s: %v", c.addr, err)
			continue
		}
		if ns.Host != c.host || ns.Port != c.port || ns.Username != c.user || ns.Password != c.pass ||
			ns.DB != c.db || ns.RESP3 != c.resp3 || ns.ClientName != c.name || ns.Display != c.display || (ns.TLS != nil) != c.tls {
			t.Errorf("%s: got %+v", c.addr, ns)
			continue
		}
		if ns.TLS != nil {
			if ns.TLS.ServerName != c.sni || ns.TLS.InsecureSkipVerify != c.skip || ns.TLS.MinVersion < tls.VersionTLS12 {
				t.Errorf("%s: tls ServerName %q skip %v min %x", c.addr, ns.TLS.ServerName, ns.TLS.InsecureSkipVerify, ns.TLS.MinVersion)
			}
		}
	}
	// A Config.TLS makes plain host:port nodes TLS ones, with the node's
	// host as ServerName and without touching the caller's config.
	mine := &tls.Config{}
	ns, err := Parse(0, "db1.example:7000", Defaults{TLS: mine})
	if err != nil || ns.TLS == nil || ns.TLS.ServerName != "db1.example" || ns.TLS.InsecureSkipVerify || mine.ServerName != "" {
		t.Fatalf("Config.TLS: %+v %v", ns, err)
	}
	if ns.TLS.MinVersion != tls.VersionTLS12 {
		t.Fatalf("default MinVersion %x", ns.TLS.MinVersion)
	}
	if _, err := Parse(0, "redis://db1.example:7000", Defaults{TLS: mine}); err == nil || !strings.Contains(err.Error(), "write rediss://") {
		t.Fatalf("redis:// with Config.TLS: %v", err)
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
