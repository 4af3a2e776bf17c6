package nodeaddr

import (
	"crypto/tls"
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestSentinelURL parses redis-sentinel:// node addresses: the sentinels,
// the master name, the sentinels' own credentials apart from the node's,
// the printed form (no password of either kind), and errors that name the
// address's index and cause and print no password.
func TestSentinelURL(t *testing.T) {
	base := Defaults{Username: "u0", Password: "p0", DB: 1, ClientName: "base"}
	good := []struct {
		addr          string
		sentinels     []string
		master        string
		user, pass    string
		suser, spass  string
		db            int
		resp3         bool
		name, display string
	}{
		{addr: "redis-sentinel://10.0.0.1?sentinelMasterId=mymaster", sentinels: []string{"10.0.0.1:26379"}, master: "mymaster",
			user: "u0", pass: "p0", db: 1, name: "base", display: "redis-sentinel://10.0.0.1:26379?sentinelMasterId=mymaster"},
		{addr: "redis-sentinel://alice:pw-secret@s1:5000/2?sentinelMasterId=m&sentinel=s2:5001&sentinel=s3&sentinel_username=su&sentinel_password=sp-secret&protocol=3&client_name=x",
			sentinels: []string{"s1:5000", "s2:5001", "s3:26379"}, master: "m", user: "alice", pass: "pw-secret", suser: "su", spass: "sp-secret",
			db: 2, resp3: true, name: "x", display: "redis-sentinel://alice:***@s1:5000/2?sentinelMasterId=m&sentinel=s2:5001&sentinel=s3:26379"},
		{addr: "redis-sentinel://:pw-secret@[::1]:5000?sentinel=[::1]:5001&sentinelMasterId=my%2Dm&db=4&sentinel_password=a%26b%3Dc",
			sentinels: []string{"[::1]:5000", "[::1]:5001"}, master: "my-m", pass: "pw-secret", spass: "a&b=c", db: 4, name: "base",
			display: "redis-sentinel://:***@[::1]:5000/4?sentinelMasterId=my-m&sentinel=[::1]:5001"},
		// an unescaped '@' in a query value (RFC 3986 allows it)
		{addr: "redis-sentinel://s1:5000?sentinelMasterId=m&sentinel_password=Tr0ub4dor@horse-secret",
			sentinels: []string{"s1:5000"}, master: "m", user: "u0", pass: "p0", spass: "Tr0ub4dor@horse-secret", db: 1, name: "base",
			display: "redis-sentinel://s1:5000?sentinelMasterId=m"},
		{addr: "redis-sentinel://alice:pw-secret@s1:5000?sentinelMasterId=m&sentinel_password=Tr0ub4dor@horse-secret",
			sentinels: []string{"s1:5000"}, master: "m", user: "alice", pass: "pw-secret", spass: "Tr0ub4dor@horse-secret", db: 1, name: "base",
			display: "redis-sentinel://alice:***@s1:5000?sentinelMasterId=m"},
	}
	for _, c := range good {
		ns, err := Parse(3, c.addr, base)
		if err != nil {
			t.Errorf("%s: %v", c.addr, err)
			continue
		}
		ss := ns.Sentinel
		if ss == nil {
			t.Errorf("%s: not a sentinel node", c.addr)
			continue
		}
		if !slices.Equal(ss.Sentinels, c.sentinels) || ss.MasterName != c.master || ss.Username != c.suser || ss.Password != c.spass ||
			ns.Username != c.user || ns.Password != c.pass || ns.DB != c.db || ns.RESP3 != c.resp3 || ns.ClientName != c.name ||
			ns.Display != c.display || ns.Host != "" || ns.TLS != nil {
			t.Errorf("%s: got %+v, sentinels %+v", c.addr, ns, ss)
		}
		if strings.Contains(ns.Display, "secret") || strings.Contains(ns.Display, "sp") && c.spass != "" && strings.Contains(ns.Display, c.spass) {
			t.Errorf("%s: display %q shows a password", c.addr, ns.Display)
		}
	}
	na, err := Parse(-1, good[1].addr, Defaults{})
	if err != nil || na.Addr() != "" || na.Sentinel == nil || na.Sentinel.MasterName != "m" || len(na.Sentinel.Sentinels) != 3 ||
		na.Sentinel.Password != "sp-secret" || na.Password != "pw-secret" {
		t.Errorf("Parse: %+v %+v %v", na, na.Sentinel, err)
	}

	bad := []struct{ addr, want string }{
		{"redis-sentinel://s1?sentinel_password=sp-secret", "no master name"},
		{"redis-sentinel://:pw-secret@s1:26379,s2:26379?sentinelMasterId=m", "further sentinels as &sentinel=host:port"},
		{"redis-sentinel://s1?sentinelMasterId=m&master_name=x", `unknown option "master_name"`},
		{"redis-sentinel://s1?sentinelMasterId=m&cacert=ca.pem", "plaintext"},
		{"redis-sentinel://s1?sentinelMasterId=m&sentinel=s2:abc", `sentinel "s2:abc": bad port`},
		{"redis-sentinel://s1:0?sentinelMasterId=m", "bad port"},
		{"redis-sentinel://s1?sentinelMasterId=m&sentinel=s1:26379", "given twice"},
		{"redis-sentinel://s1?sentinelMasterId=a&sentinelMasterId=b", `"sentinelMasterId" given twice`},
		{"redis-sentinel://s1?sentinelMasterId=m&sentinel_username=su", "sentinel_username without sentinel_password"},
		{"redis-sentinel://s1?sentinelMasterId=m&sentinel_password=", "empty sentinel_password"},
		{"redis-sentinel://alice@s1?sentinelMasterId=m", "user without password"},
		{"redis-sentinel://s1?sentinelMasterId=m&sentinel_password=sp-secret%zz", "malformed query"},
		{"redis-sentinel://s1/x?sentinelMasterId=m", "want /db"},
		{"redis-sentinel://s1?sentinelMasterId=m&protocol=4", "protocol"},
		{"redis-sentinel://s1?sentinelMasterId=m%20x%0A", "spaces or newlines"},
	}
	for _, c := range bad {
		_, err := Parse(3, c.addr, base)
		if err == nil {
			t.Errorf("%s: accepted", c.addr)
			continue
		}
		msg := err.Error()
		if !errors.Is(err, ErrConfig) || !strings.Contains(msg, "address 3") || !strings.Contains(msg, c.want) {
			t.Errorf("%s: %v, want ErrConfig naming address 3 and %q", c.addr, err, c.want)
		}
		if strings.Contains(msg, "secret") {
			t.Errorf("%s: a password in %q", c.addr, msg)
		}
	}
	withTLS := base
	withTLS.TLS = &tls.Config{}
	if _, err := Parse(0, "redis-sentinel://s1?sentinelMasterId=m", withTLS); err == nil || !strings.Contains(err.Error(), "Config.TLS") {
		t.Errorf("Config.TLS with a sentinel node: %v", err)
	}
}
