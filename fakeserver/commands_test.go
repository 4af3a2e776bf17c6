package fakeserver

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redmux/redmux/redlock/scripts"
)

func TestEveryScriptIsKnown(t *testing.T) {
	for _, s := range scripts.All {
		if knownScripts[s.SHA] == nil {
			t.Errorf("script %q (sha %s) has no native implementation", s.Name, s.SHA)
		}
		if sha1Hex([]byte(s.Text)) != s.SHA {
			t.Errorf("script %q: SHA does not match its text", s.Name)
		}
	}
}

func TestScripts(t *testing.T) {
	n := startNode(t, Config{})
	c := dial(t, n.Addr())
	rel, ext := scripts.Release, scripts.Extend
	any := "return redis.call('get', KEYS[1])"
	eqReply(t, "eval any script", c.do("EVAL", any, "1", "k"), nullBulk)
	eqReply(t, "script load any", c.do("SCRIPT", "LOAD", any), bulk(sha1Hex([]byte(any))))
	// EVAL caches the script for EVALSHA, as Redis does
	eqReply(t, "noscript", c.do("EVALSHA", ext.SHA, "1", "k", "v", "100"), errReply("NOSCRIPT No matching script. Please use EVAL."))
	eqReply(t, "eval ext", c.do("EVAL", ext.Text, "1", "k", "v", "100"), integer(0))
	eqReply(t, "evalsha cached", c.do("EVALSHA", ext.SHA, "1", "k", "v", "100"), integer(0))
	// lock path: SET NX PX, extend, release
	eqReply(t, "acquire", c.do("SET", "lock", "tok", "NX", "PX", "1000"), okReply)
	eqReply(t, "contended", c.do("SET", "lock", "other", "NX", "PX", "1000"), nullBulk)
	eqReply(t, "extend", c.do("EVALSHA", ext.SHA, "1", "lock", "tok", "60000"), integer(1))
	if ttl := n.PTTL("lock"); ttl < 59*time.Second {
		t.Errorf("PTTL after extend = %v", ttl)
	}
	eqReply(t, "extend wrong token", c.do("EVALSHA", ext.SHA, "1", "lock", "bad", "60000"), integer(0))
	eqReply(t, "release wrong token", c.do("EVAL", rel.Text, "1", "lock", "bad"), integer(0))
	eqReply(t, "release", c.do("EVALSHA", rel.SHA, "1", "lock", "tok"), integer(1))
	if _, ok := n.Get("lock"); ok {
		t.Error("lock still present after release")
	}
	eqReply(t, "release again", c.do("EVALSHA", rel.SHA, "1", "lock", "tok"), integer(0))
}

func TestExpiryEdges(t *testing.T) {
	n := startNode(t, Config{SweepInterval: 10 * time.Millisecond})
	c := dial(t, n.Addr())
	eqReply(t, "px 1", c.do("SET", "a", "v", "PX", "1"), okReply)
	time.Sleep(5 * time.Millisecond)
	eqReply(t, "px 1 gone", c.do("GET", "a"), nullBulk)
	eqReply(t, "pttl gone", c.do("PTTL", "a"), integer(-2))

	// expiring mid-test, removed by the active sweep without any access
	exp0 := n.Stats().Expired
	for _, k := range []string{"m1", "m2", "m3"} {
		c.do("SET", k, "v", "PX", "30")
	}
	c.do("SET", "keep", "v")
	if n.DBSize() != 4 {
		t.Errorf("dbsize = %d", n.DBSize())
	}
	deadline := time.Now().Add(2 * time.Second)
	for n.Stats().Expired-exp0 < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := n.Stats().Expired - exp0; got < 3 {
		t.Errorf("active sweep expired %d keys, want 3", got)
	}
	eqReply(t, "dbsize after sweep", c.do("DBSIZE"), integer(1))

	// KEEPTTL keeps the deadline; a plain SET clears it
	c.do("SET", "k", "v1", "PX", "5000")
	c.do("SET", "k", "v2", "KEEPTTL")
	if ttl := n.PTTL("k"); ttl <= 0 || ttl > 5*time.Second {
		t.Errorf("KEEPTTL: PTTL = %v", ttl)
	}
	if v, _ := n.Get("k"); string(v) != "v2" {
		t.Errorf("KEEPTTL value %q", v)
	}
	c.do("SET", "k", "v3")
	if ttl := n.PTTL("k"); ttl != -1 {
		t.Errorf("plain SET kept the TTL: %v", ttl)
	}
	if ttl := n.PTTL("nokey"); ttl != -2 {
		t.Errorf("missing key PTTL = %v", ttl)
	}
	// EXAT / PXAT on the node clock; TTL rounds like Redis
	at := time.Now().Add(10 * time.Second)
	c.do("SET", "x", "v", "PXAT", itoa(at.UnixMilli()))
	if r := c.do("TTL", "x"); r != integer(10) && r != integer(9) {
		t.Errorf("TTL after PXAT = %q", r)
	}
	c.do("SET", "x", "v", "EXAT", itoa(time.Now().Unix()-1))
	eqReply(t, "EXAT in the past", c.do("EXISTS", "x"), integer(0))
	// PEXPIRE 0 deletes, a negative EXPIRE too
	c.do("SET", "y", "v")
	eqReply(t, "pexpire 0", c.do("PEXPIRE", "y", "0"), integer(1))
	eqReply(t, "deleted", c.do("EXISTS", "y"), integer(0))
	// INCR keeps the TTL
	c.do("SET", "i", "1", "EX", "100")
	eqReply(t, "incr", c.do("INCR", "i"), integer(2))
	if ttl := n.PTTL("i"); ttl <= 90*time.Second {
		t.Errorf("INCR lost the TTL: %v", ttl)
	}
}

func itoa(v int64) string { return strings.TrimSuffix(strings.TrimPrefix(integer(v), ":"), "\r\n") }

func TestAuthUsersAndHello(t *testing.T) {
	n := startNode(t, Config{Password: "pw", Users: map[string]string{"alice": "apw"}})
	c := dial(t, n.Addr())
	eqReply(t, "noauth", c.do("GET", "k"), errReply("NOAUTH Authentication required."))
	eqReply(t, "wrong user pw", c.do("AUTH", "alice", "pw"), errReply(wrongPass))
	// An empty user name is not the default user (issue 34 R10: it
	// authenticated): Redis 7.0.15 answers WRONGPASS to both.
	eqReply(t, "hello empty user", c.do("HELLO", "3", "AUTH", "", "pw"), errReply(wrongPass))
	eqReply(t, "auth empty user", c.do("AUTH", "", "pw"), errReply(wrongPass))
	eqReply(t, "still noauth", c.do("GET", "k"), errReply("NOAUTH Authentication required."))
	eqReply(t, "alice", c.do("AUTH", "alice", "apw"), okReply)
	eqReply(t, "authed", c.do("GET", "k"), nullBulk)
	d := dial(t, n.Addr())
	h := d.do("HELLO", "3", "AUTH", "alice", "apw", "SETNAME", "worker1")
	if !hasPrefix(h, "%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n") || !strings.Contains(h, "$5\r\nproto\r\n:3\r\n") {
		t.Errorf("hello 3 = %q", h)
	}
	eqReply(t, "getname", d.do("CLIENT", "GETNAME"), bulk("worker1"))
	eqReply(t, "resp3 null", d.do("GET", "nokey"), resp3Nil)
	info := d.do("CLIENT", "INFO")
	if !hasPrefix(info, "=") || !strings.Contains(info, "name=worker1") || !strings.Contains(info, "user=alice") || !strings.Contains(info, "resp=3") {
		t.Errorf("client info = %q", info)
	}
	list := d.do("CLIENT", "LIST")
	if strings.Count(list, "id=") != 2 {
		t.Errorf("client list = %q", list)
	}
	if r := d.do("CONFIG", "GET", "*"); !hasPrefix(r, "%6\r\n") {
		t.Errorf("config get * = %q", r)
	}
	// with no Password, the default user takes any password with 2-arg AUTH
	m := startNode(t, Config{Users: map[string]string{"bob": "b"}})
	e := dial(t, m.Addr())
	eqReply(t, "no auth needed", e.do("PING"), pongReply)
	eqReply(t, "bob", e.do("AUTH", "bob", "b"), okReply)
	eqReply(t, "bob wrong", e.do("AUTH", "bob", "x"), errReply(wrongPass))
}

func TestSelectFlushInfoCommand(t *testing.T) {
	n := startNode(t, Config{})
	c := dial(t, n.Addr())
	c.do("SET", "k0", "v")
	c.do("SELECT", "3")
	c.do("SET", "k3", "v", "EX", "100")
	if n.DBSize() != 1 {
		t.Errorf("db0 size = %d", n.DBSize())
	}
	info := c.do("INFO", "keyspace")
	if !strings.Contains(info, "db0:keys=1,expires=0,avg_ttl=0\r\n") || !strings.Contains(info, "db3:keys=1,expires=1,avg_ttl=0\r\n") {
		t.Errorf("info keyspace = %q", info)
	}
	all := c.do("INFO", "everything")
	for _, sec := range []string{"# Server\r\n", "# Clients\r\n", "# Keyspace\r\n", "# Commandstats\r\n", "redis_version:" + Version, "cmdstat_set:calls=2,", "connected_clients:1"} {
		if !strings.Contains(all, sec) {
			t.Errorf("INFO everything lacks %q", sec)
		}
	}
	if def := c.do("INFO"); strings.Contains(def, "# Commandstats") || !strings.Contains(def, "# Server") {
		t.Errorf("default INFO sections wrong")
	}
	eqReply(t, "flushdb", c.do("FLUSHDB"), okReply)
	if _, ok := n.Get("k0"); !ok {
		t.Error("FLUSHDB on db3 removed db0's key")
	}
	eqReply(t, "flushall", c.do("FLUSHALL"), okReply)
	if n.DBSize() != 0 {
		t.Error("FLUSHALL left keys")
	}
	cnt := c.do("COMMAND", "COUNT")
	eqReply(t, "count", cnt, integer(int64(len(commandTable))))
	gi := c.do("COMMAND", "INFO", "get", "nosuch")
	if !hasPrefix(gi, "*2\r\n*10\r\n$3\r\nget\r\n:2\r\n*2\r\n+readonly\r\n+fast\r\n:1\r\n:1\r\n:1\r\n") || !strings.HasSuffix(gi, "*-1\r\n") {
		t.Errorf("command info = %q", gi)
	}
	if all := c.do("COMMAND"); !hasPrefix(all, "*"+itoa(int64(len(commandTable)))+"\r\n*10\r\n") {
		t.Errorf("COMMAND = %.40q", all)
	}
	eqReply(t, "docs", c.do("COMMAND", "DOCS"), "*0\r\n")
	c.do("HELLO", "3")
	if r3 := c.do("COMMAND", "INFO", "get"); !hasPrefix(r3, "*1\r\n*10\r\n$3\r\nget\r\n:2\r\n~2\r\n+readonly\r\n+fast\r\n:1\r\n:1\r\n:1\r\n~0\r\n") {
		t.Errorf("RESP3 command info = %q", r3)
	}
	eqReply(t, "docs resp3", c.do("COMMAND", "DOCS"), "%0\r\n")
	if l := c.do("COMMAND", "LIST"); !strings.Contains(l, bulk("evalsha")) {
		t.Errorf("command list = %q", l)
	}
	st := n.Stats()
	if st.Commands < 10 || st.Accepted != 1 || st.CurrentConn != 1 {
		t.Errorf("stats = %+v", st)
	}
}

func TestDefaultUserPasswordFromUsers(t *testing.T) {
	n := startNode(t, Config{Users: map[string]string{"default": "dpw"}})
	c := dial(t, n.Addr())
	eqReply(t, "noauth", c.do("PING"), errReply("NOAUTH Authentication required."))
	eqReply(t, "wrong", c.do("AUTH", "x"), errReply(wrongPass))
	eqReply(t, "auth", c.do("AUTH", "dpw"), okReply)
	eqReply(t, "ping", c.do("PING"), pongReply)
}

// TestConfigGetPatterns: CONFIG GET matches its (lower-cased) patterns with
// Redis's glob, classes and escapes included, as KEYS does.
func TestConfigGetPatterns(t *testing.T) {
	n := startNode(t, Config{})
	c := dial(t, n.Addr())
	pairs := func(kv ...string) string {
		s := fmt.Sprintf("*%d\r\n", len(kv))
		for _, x := range kv {
			s += bulk(x)
		}
		return s
	}
	for _, tc := range []struct {
		pat, want string
	}{
		{"save", pairs("save", "")},
		{"SAVE", pairs("save", "")},
		{"max*", pairs("maxclients", "10000", "maxmemory", "0")},
		{"max[cm]*", pairs("maxclients", "10000", "maxmemory", "0")},
		{"max[^c]*", pairs("maxmemory", "0")},
		{"MAX?LIENTS", pairs("maxclients", "10000")},
		{"[a-d]*", pairs("appendonly", "no", "databases", "16")},
		{`\sav?`, pairs("save", "")},
		{"*out", pairs("timeout", "0")},
		{"nosuch*", pairs()},
	} {
		eqReply(t, tc.pat, c.do("CONFIG", "GET", tc.pat), tc.want)
	}
}
