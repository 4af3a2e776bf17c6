package fakeserver

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redmux/redmux/internal/redisproc/redistest"
	"github.com/redmux/redmux/redlock/scripts"
)

// comparison modes for a differential step
const (
	exact    = iota
	intTol   // both integer replies within tol
	sameType // same RESP type byte (contents legitimately differ: INFO, COUNT)
	maskIDs  // equal after masking client ids (HELLO, CLIENT ID)
)

type step struct {
	args   []string
	raw    string // sent as is instead of args (inline or hostile bytes)
	mode   int
	tol    int64
	closes bool // the server closes the connection after this reply
}

func s(args ...string) step { return step{args: args} }
func tol(t int64, args ...string) step {
	return step{args: args, mode: intTol, tol: t}
}
func shape(args ...string) step { return step{args: args, mode: sameType} }
func masked(args ...string) step {
	return step{args: args, mode: maskIDs}
}
func raw(r string, closes bool) step { return step{raw: r, closes: closes} }

type sequence struct {
	name  string
	steps []step
}

var idRE = regexp.MustCompile(`(\$2\r\nid\r\n:)\d+|^:\d+\r\n$`)

func normalize(st step, b string) string {
	if st.mode == maskIDs {
		return idRE.ReplaceAllString(b, "${1}ID")
	}
	return b
}

func compareStep(t *testing.T, seq string, i int, st step, real, fake string) {
	t.Helper()
	what := fmt.Sprintf("%s step %d %q%q", seq, i, st.args, st.raw)
	switch st.mode {
	case exact, maskIDs:
		if normalize(st, real) != normalize(st, fake) {
			t.Errorf("%s:\n real %q\n fake %q", what, real, fake)
		}
	case sameType:
		if real == "" || fake == "" || real[0] != fake[0] {
			t.Errorf("%s: type differs:\n real %q\n fake %q", what, real, fake)
		}
	case intTol:
		if !hasPrefix(real, ":") || !hasPrefix(fake, ":") {
			t.Errorf("%s: want integers:\n real %q\n fake %q", what, real, fake)
			return
		}
		a, _ := strconv.ParseInt(strings.TrimSpace(real[1:]), 10, 64)
		b, _ := strconv.ParseInt(strings.TrimSpace(fake[1:]), 10, 64)
		if d := a - b; d > st.tol || d < -st.tol || (a < 0) != (b < 0) {
			t.Errorf("%s: real %d fake %d differ by more than %d", what, a, b, st.tol)
		}
	}
}

func diffSequences() []sequence {
	rel, ext := scripts.Release, scripts.Extend
	nowS := time.Now().Unix()
	nowMs := time.Now().UnixMilli()
	return []sequence{
		{"ping-echo", []step{s("PING"), s("ping", "hello"), s("PING", "a", "b"), s("ECHO", "x y"), s("ECHO"), s("echo", "")}},
		{"unknown", []step{s("FOO", "a", "b"), s("FOO"), s("FAKE", "HELP"), s("GETX", strings.Repeat("z", 200))}},
		{"set-options", []step{
			s("SET", "k", "v"), s("GET", "k"), s("SET", "k", "v2", "NX"), s("SET", "k", "v3", "XX", "GET"),
			s("GET", "k"), s("SET", "k2", "v", "XX"), s("SET", "k2", "v", "NX", "GET"), s("set", "k2", "w", "nx", "get"),
			s("SET", "k", "v", "NX", "XX"), s("SET", "k", "v", "PX", "0"), s("SET", "k", "v", "EX", "-1"),
			s("SET", "k", "v", "PX", "abc"), s("SET", "k", "v", "EX", "10", "PX", "10"), s("SET", "k", "v", "KEEPTTL", "EX", "10"),
			s("SET", "k", "v", "PX"), s("SET", "k", "v", "BOGUS"), s("SET", "k"), s("SET", "k", "v", "PXAT", "0"),
			s("SET", "k", "v", "PX", "9223372036854775807"), s("SET", "k", "v", "EX", "9223372036854775807"),
			s("SET", "k", "v", "PX", "+5"), s("SET", "k", "v", "PX", "05"), s("GET", "k"), s("GET"), s("GET", "a", "b"),
		}},
		{"ttl", []step{
			s("SET", "t", "v", "PX", "100000"), tol(200, "PTTL", "t"), s("TTL", "t"), s("SET", "t", "v2", "KEEPTTL"),
			tol(200, "PTTL", "t"), s("SET", "t", "v3"), s("PTTL", "t"), s("PTTL", "missing"), s("TTL", "missing"),
			s("SET", "t", "v", "EXAT", strconv.FormatInt(nowS+100, 10)), tol(2, "TTL", "t"),
			s("SET", "t", "v", "PXAT", strconv.FormatInt(nowMs+100000, 10)), tol(1500, "PTTL", "t"),
			s("SET", "t", "v", "PXAT", "1"), s("GET", "t"), s("EXISTS", "t"), s("PTTL"), s("TTL", "a", "b"),
		}},
		{"expire", []step{
			s("PEXPIRE", "nokey", "100"), s("SET", "e", "v"), s("PEXPIRE", "e", "100000"), tol(200, "PTTL", "e"),
			s("EXPIRE", "e", "100", "NX"), s("EXPIRE", "e", "200", "XX"), s("EXPIRE", "e", "50", "GT"),
			s("EXPIRE", "e", "300", "gt"), s("EXPIRE", "e", "400", "LT"), s("EXPIRE", "e", "10", "LT"), s("TTL", "e"),
			s("PEXPIRE", "e", "10", "NX", "XX"), s("EXPIRE", "e", "10", "GT", "LT"), s("EXPIRE", "e", "10", "FOO"),
			s("EXPIRE", "e", "abc"), s("EXPIRE", "e", "99999999999999999"), s("PEXPIRE", "e", "9223372036854775807"),
			s("PEXPIRE", "e", "-1"), s("EXISTS", "e"), s("SET", "p", "v"), s("EXPIRE", "p", "100", "XX"),
			s("EXPIRE", "p", "100", "GT"), s("EXPIRE", "p", "100", "LT"), s("TTL", "p"), s("EXPIRE", "p", "0"), s("GET", "p"),
			s("EXPIRE", "p"),
		}},
		{"del-exists", []step{
			s("SET", "a", "1"), s("SET", "b", "2"), s("EXISTS", "a", "b", "a", "c"), s("DEL", "a", "c"), s("DEL", "a"),
			s("EXISTS"), s("DEL"), s("TYPE", "b"), s("TYPE", "nokey"), s("TYPE"),
		}},
		{"incr", []step{
			s("INCR", "i"), s("INCR", "i"), s("SET", "s", "abc"), s("INCR", "s"), s("SET", "big", "9223372036854775807"),
			s("INCR", "big"), s("SET", "z", "01"), s("INCR", "z"), s("SET", "neg", "-5"), s("INCR", "neg"), s("INCR"),
			s("SET", "ie", "1", "PX", "100000"), s("INCR", "ie"), tol(200, "PTTL", "ie"),
		}},
		{"select-flush", []step{
			s("SELECT", "1"), s("SET", "x", "1"), s("DBSIZE"), s("SELECT", "0"), s("DBSIZE"), s("GET", "x"),
			s("SELECT", "16"), s("SELECT", "x"), s("SELECT", "-1"), s("SET", "y", "1"), s("DBSIZE", "extra"),
			s("FLUSHDB"), s("DBSIZE"), s("SELECT", "1"), s("DBSIZE"), s("FLUSHALL", "ASYNC"), s("DBSIZE"),
			s("FLUSHALL", "BAD"), s("FLUSHDB", "a", "b"), s("FLUSHDB", "SYNC"),
		}},
		{"auth-nopass", []step{
			s("AUTH", "x"), s("AUTH", "default", "anything"), s("AUTH", "a", "b", "c"), s("AUTH", "nosuch", "pw"), s("AUTH"),
		}},
		{"hello-resp3", []step{
			masked("HELLO"), masked("HELLO", "3"), s("GET", "missing"), s("SET", "h", "v", "NX", "GET"), s("SET", "h", "w", "XX", "GET"),
			s("CONFIG", "GET", "save"), s("CONFIG", "GET", "appendonly"), s("SCRIPT", "EXISTS", rel.SHA), s("CLIENT", "GETNAME"),
			s("COMMAND", "INFO", "nosuchcmd"), shape("INFO", "keyspace"), s("HELLO", "4"), s("HELLO", "x"),
			s("HELLO", "3", "FOO"), s("HELLO", "2", "SETNAME", "a b"), masked("HELLO", "2", "SETNAME", "me"),
			s("CLIENT", "GETNAME"), s("GET", "missing"), s("CONFIG", "GET", "save"), s("HELLO", "3", "AUTH", "default"),
		}},
		{"client", []step{
			s("CLIENT", "GETNAME"), s("CLIENT", "SETNAME", "foo"), s("CLIENT", "GETNAME"), s("CLIENT", "SETNAME", "a b"),
			s("CLIENT", "GETNAME"), s("CLIENT", "FOO"), s("CLIENT", "SETNAME"), s("CLIENT", "ID", "x"), masked("CLIENT", "ID"),
			s("CLIENT"), shape("CLIENT", "INFO"), s("CLIENT", "SETNAME", ""), s("CLIENT", "GETNAME"),
		}},
		{"scripts", []step{
			s("SCRIPT", "EXISTS", rel.SHA), s("EVALSHA", rel.SHA, "1", "lk", "v"), s("SCRIPT", "LOAD", rel.Text),
			s("SCRIPT", "EXISTS", rel.SHA, ext.SHA, strings.ToUpper(rel.SHA)), s("SET", "lk", "val"),
			s("EVALSHA", rel.SHA, "1", "lk", "wrong"), s("EVALSHA", strings.ToUpper(rel.SHA), "1", "lk", "val"), s("GET", "lk"),
			s("EVAL", ext.Text, "1", "lk", "val", "1000"), s("SET", "lk", "val"), s("EVAL", ext.Text, "1", "lk", "val", "100000"),
			tol(200, "PTTL", "lk"), s("EVALSHA", ext.SHA, "1", "lk", "val", "abc"), s("EVALSHA", ext.SHA, "1", "lk", "val"),
			s("EVALSHA", rel.SHA, "1", "lk"), s("EVALSHA", rel.SHA, "0"), s("EVALSHA", rel.SHA, "x"), s("EVALSHA", rel.SHA, "5", "a"),
			s("EVALSHA", rel.SHA, "-1"), s("EVALSHA", "abc", "0"), s("EVALSHA", "abc", "x"), s("EVALSHA", strings.Repeat("ab", 20), "x"),
			s("EVALSHA", strings.Repeat("ab", 20), "3", "k"), s("EVALSHA", strings.Repeat("ab", 20), "1", "k"), s("EVAL", ext.Text, "1", "lk", "val", "0"),
			s("EXISTS", "lk"), s("SET", "lk", "val"), s("EVAL", rel.Text, "2", "lk", "other", "val", "extra"), s("GET", "lk"),
			s("SCRIPT", "FLUSH"), s("SCRIPT", "EXISTS", rel.SHA, ext.SHA), s("EVALSHA", ext.SHA, "1", "lk", "v", "10"),
			s("SCRIPT", "FOO"), s("SCRIPT", "LOAD"), s("SCRIPT", "FLUSH", "BAD"), s("SCRIPT", "EXISTS"), s("SCRIPT", "KILL"),
			s("EVAL", rel.Text), s("EVALSHA"), s("SCRIPT", "FLUSH", "ASYNC"),
		}},
		{"inline", []step{
			raw("PING\r\n", false), raw("set inl 'a b'\r\n", false), raw("get inl\r\n", false), raw("\r\n*0\r\nPING\r\n", false),
			raw("*-1\r\nECHO x\r\n", false), raw("$99999999999\r\n", false),
		}},
		{"proto-neg-bulk", []step{s("PING"), raw("*1\r\n$-2\r\n", true)}},
		{"proto-bad-count", []step{raw("*abc\r\n", true)}},
		{"proto-nesting", []step{raw("*1\r\n*1\r\n*1\r\n", true)}},
		{"proto-huge-bulk", []step{raw("*2\r\n$3\r\nGET\r\n$99999999999\r\n", true)}},
		{"proto-quotes", []step{raw("set a \"b\r\n", true)}},
		{"command-config", []step{
			s("COMMAND", "FOO"), s("COMMAND", "COUNT", "x"), shape("COMMAND", "COUNT"), s("CONFIG", "GET"), s("CONFIG", "FOO"),
			s("CONFIG", "GET", "nosuchparam"), s("CONFIG"), shape("INFO"), shape("INFO", "commandstats"), s("QUIT"),
		}},
	}
}

func runSequence(t *testing.T, addr string, seq sequence, password string) []string {
	t.Helper()
	c := dial(t, addr)
	if password != "" {
		if r := c.do("AUTH", password); r != okReply {
			t.Fatalf("auth: %q", r)
		}
	}
	if r := c.do("FLUSHALL"); r != okReply && !hasPrefix(r, "-NOAUTH") {
		t.Fatalf("flushall: %q", r)
	}
	if r := c.do("SCRIPT", "FLUSH"); r != okReply && !hasPrefix(r, "-NOAUTH") {
		t.Fatalf("script flush: %q", r)
	}
	if password != "" {
		// start the sequence unauthenticated
		_ = c.c.Close()
		c = dial(t, addr)
	}
	var out []string
	for _, st := range seq.steps {
		if st.raw != "" {
			if _, err := c.c.Write([]byte(st.raw)); err != nil {
				t.Fatalf("%s: write: %v", seq.name, err)
			}
		} else {
			c.send(st.args...)
		}
		r, err := c.tryRead(3 * time.Second)
		if err != nil {
			r = "<error: " + err.Error() + ">"
		}
		if st.closes || (len(st.args) > 0 && strings.EqualFold(st.args[0], "quit")) {
			_, err := c.tryRead(2 * time.Second)
			if err == nil {
				r += "<still open>"
			} else if !strings.Contains(err.Error(), "EOF") && !strings.Contains(err.Error(), "reset") {
				r += "<not closed: " + err.Error() + ">"
			}
		}
		out = append(out, r)
	}
	return out
}

func diffRun(t *testing.T, seqs []sequence, realAddr, fakeAddr, password string) int {
	t.Helper()
	count := 0
	for _, seq := range seqs {
		real := runSequence(t, realAddr, seq, password)
		fake := runSequence(t, fakeAddr, seq, password)
		for i, st := range seq.steps {
			compareStep(t, seq.name, i, st, real[i], fake[i])
			if testing.Verbose() {
				t.Logf("%s %q%q -> %q", seq.name, st.args, st.raw, fake[i])
			}
			count++
		}
	}
	return count
}

// TestDifferentialRealRedis sends the same command sequences to a real
// redis-server and to a fake node and compares the replies byte for byte.
func TestDifferentialRealRedis(t *testing.T) {
	real := redistest.Start(t, redistest.Options{})
	fake := startNode(t, Config{DisableAdmin: true})
	n := diffRun(t, diffSequences(), real.Addr, fake.Addr(), "")
	if n < 60 {
		t.Fatalf("only %d commands compared", n)
	}
	t.Logf("%d commands compared", n)
}

func TestDifferentialRealRedisPassword(t *testing.T) {
	const pw = "s3cret-pw"
	real := redistest.Start(t, redistest.Options{Password: pw})
	fake := startNode(t, Config{Password: pw, DisableAdmin: true})
	seqs := []sequence{{"requirepass", []step{
		s("GET", "k"), s("PING"), s("HELLO", "3"), s("FOO"), s("GET"), s("AUTH", "wrong"), s("AUTH", "default", "wrong"),
		s("HELLO", "3", "AUTH", "default", "wrong"), s("GET", "k"), masked("HELLO", "3", "AUTH", "default", pw),
		s("GET", "k"), s("AUTH", pw), s("AUTH", "default", pw), s("SET", "k", "v"), s("GET", "k"), s("QUIT"),
	}}}
	diffRun(t, seqs, real.Addr, fake.Addr(), pw)
}
