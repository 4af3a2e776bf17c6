package fakeserver

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redmux/redmux/internal/redisproc/redistest"
	"github.com/redmux/redmux/redlock/scripts"
)

// comparison modes for a differential step
const (
	exact     = iota
	intTol    // both integer replies within tol
	sameType  // same RESP type byte (contents legitimately differ: INFO, COUNT)
	maskIDs   // equal after masking client ids (HELLO, CLIENT ID)
	luaMasked // equal after masking the Lua interpreter's message (see maskLuaMsg)
	sorted    // the same array elements in any order (KEYS)
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
	switch st.mode {
	case maskIDs:
		return idRE.ReplaceAllString(b, "${1}ID")
	case luaMasked:
		return maskLuaMsg(b)
	case sorted:
		lines := strings.Split(b, "\r\n")
		if len(lines) > 1 {
			head := lines[0]
			pairs := []string{}
			for i := 1; i+1 < len(lines); i += 2 {
				pairs = append(pairs, lines[i]+"\r\n"+lines[i+1])
			}
			sort.Strings(pairs)
			return head + "\r\n" + strings.Join(pairs, "\r\n")
		}
	}
	return b
}

func compareStep(t *testing.T, seq string, i int, st step, real, fake string) {
	t.Helper()
	what := fmt.Sprintf("%s step %d %q%q", seq, i, st.args, st.raw)
	switch st.mode {
	case exact, maskIDs, luaMasked, sorted:
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
		{"tracking-flush", []step{
			masked("HELLO", "3"), s("CLIENT", "TRACKING", "ON", "OPTIN"), s("SET", "a", "1"), s("FLUSHALL"), s("GET", "a"),
			s("SET", "a", "1"), s("FLUSHDB"), s("PING"), s("SELECT", "3"), s("FLUSHDB"), s("SELECT", "0"), s("PING"),
			s("CLIENT", "TRACKING", "OFF"), s("FLUSHALL"), s("PING"), s("CLIENT", "TRACKING"), s("CLIENT", "TRACKING", "maybe"),
			s("CLIENT", "TRACKING", "ON", "OPTIN"), s("FLUSHALL"), s("PING"),
		}},
		{"tracking-resp2", []step{ // taken, and told nothing (Redis drops it without REDIRECT)
			s("CLIENT", "TRACKING", "ON", "OPTIN"), s("SET", "a", "1"), s("FLUSHALL"), s("PING"), s("GET", "a"),
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
		{"fenced-acquire", fencedAcquireSteps()},
		{"inline", []step{
			raw("PING\r\n", false), raw("set inl 'a b'\r\n", false), raw("get inl\r\n", false), raw("\r\n*0\r\nPING\r\n", false),
			raw("*-1\r\nECHO x\r\n", false), raw("$99999999999\r\n", false),
		}},
		{"inline-splitargs", []step{
			raw("set  \t inl2   v\r\n", false), raw("get inl2\r\n", false), raw("echo \"a\\x41\\n\\\"b\\t\\r\\b\\a\\q\"\r\n", false),
			raw("echo 'c\\'d\\n'\r\n", false), raw("echo \"\\x4\"\r\n", false), raw("echo \"\\xzz\\x4A\\xfF\"\r\n", false),
			raw("echo a\"b c\"\n", false), raw("echo \va\r\n", false),
			raw(" \t \r\nPING\r\n", false), raw("echo \"\"\r\n", false),
			raw("echo "+strings.Repeat("ab ", 20000)+"\r\n", false),
		}},
		{"inline-unbalanced", []step{raw("echo \"a\"b\r\n", true)}},
		{"inline-unbalanced2", []step{raw("echo 'a\r\n", true)}},
		{"inline-too-big", []step{raw(strings.Repeat("x", 70000), true)}},
		{"inline-nul", []step{raw("ping\x00junk\r\n"+strings.Repeat("x", 70000), true)}},
		{"proto-leading-zero-count", []step{raw("*01\r\n$4\r\nPING\r\n", true)}},
		{"proto-leading-zero-bulk", []step{raw("*1\r\n$04\r\nPING\r\n", true)}},
		{"proto-minus-zero", []step{raw("*-0\r\n", true)}},
		{"proto-neg-bulk", []step{s("PING"), raw("*1\r\n$-2\r\n", true)}},
		{"proto-bad-count", []step{raw("*abc\r\n", true)}},
		{"proto-nesting", []step{raw("*1\r\n*1\r\n*1\r\n", true)}},
		{"proto-huge-bulk", []step{raw("*2\r\n$3\r\nGET\r\n$99999999999\r\n", true)}},
		{"proto-quotes", []step{raw("set a \"b\r\n", true)}},
		{"strings-more", []step{
			s("SET", "n", "10"), s("INCRBY", "n", "5"), s("INCRBY", "n", "x"), s("INCRBY", "n", "-20"), s("DECR", "n"), s("DECRBY", "n", "3"),
			s("DECRBY", "n", "-9223372036854775808"), s("SET", "m", "9223372036854775800"), s("INCRBY", "m", "100"), s("SET", "mn", "-9223372036854775800"),
			s("DECRBY", "mn", "100"), s("INCRBY", "n"), s("DECR"), s("GETDEL", "n"), s("GETDEL", "n"), s("GETDEL"), s("SET", "u1", "1"), s("SET", "u2", "2"),
			s("UNLINK", "u1", "u2", "u3"), s("UNLINK"), s("SET", "p", "v", "PX", "100000"), s("PERSIST", "p"), s("PTTL", "p"), s("PERSIST", "p"),
			s("PERSIST", "nokey"), s("PERSIST"), s("PEXPIREAT", "p", strconv.FormatInt(nowMs+100000, 10)), tol(1500, "PTTL", "p"),
			s("EXPIREAT", "p", strconv.FormatInt(nowS+100, 10)), tol(2, "TTL", "p"), s("EXPIREAT", "p", "1"), s("EXISTS", "p"),
			s("PEXPIREAT", "nokey", "1"), s("EXPIREAT", "p", "x"), s("PEXPIREAT", "p"), s("SET", "p", "v"), s("PEXPIREAT", "p", "99999999999999", "NX"),
			s("PEXPIREAT", "p", "99999999999998", "GT"), s("PEXPIREAT", "p", "99999999999998", "LT"), s("PTTL", "nokey"),
		}},
		{"getrange-mget", []step{
			s("SET", "g", "Hello World"), s("GETRANGE", "g", "0", "4"), s("GETRANGE", "g", "-5", "-1"), s("GETRANGE", "g", "-1", "-5"),
			s("GETRANGE", "g", "5", "100"), s("GETRANGE", "g", "20", "30"), s("GETRANGE", "nokey", "0", "1"), s("GETRANGE", "g", "x", "1"),
			s("GETRANGE", "g", "0"), s("STRLEN", "g"), s("STRLEN", "nokey"), s("HSET", "h", "f", "v"), s("STRLEN", "h"), s("GETRANGE", "h", "0", "1"),
			s("MGET", "g", "nokey", "h"), s("MGET"), s("SETNX", "g", "x"), s("SETNX", "new", "x"), s("GET", "new"), s("SETNX", "h", "x"), s("SETNX", "a"),
			s("GETRANGE", "g", "-100", "2"), s("SET", "e", ""), s("GETRANGE", "e", "0", "-1"),
		}},
		{"wrongtype", []step{
			s("HSET", "h", "f", "v"), s("LPUSH", "l", "a"), s("GET", "h"), s("SET", "h", "x", "GET"), s("INCR", "h"), s("INCRBY", "l", "2"),
			s("GETDEL", "l"), s("HGET", "l", "f"), s("LPUSH", "h", "a"), s("HSET", "l", "f", "v"), s("TYPE", "h"), s("TYPE", "l"), s("SET", "h", "now-a-string"),
			s("TYPE", "h"), s("EXPIRE", "l", "100"), tol(2, "TTL", "l"), s("DEL", "h", "l"), s("HINCRBY", "s", "f", "1"), s("SET", "s", "x"), s("HINCRBY", "s", "f", "1"),
			s("LRANGE", "s", "0", "-1"), s("LLEN", "s"), s("HLEN", "s"), s("HGETALL", "s"), s("LPOP", "s"),
		}},
		{"hashes", []step{
			s("HSET", "h", "f1", "v1", "f2", "v2"), s("HSET", "h", "f2", "w2", "f3", "v3"), s("HGET", "h", "f2"), s("HGET", "h", "nof"), s("HGET", "noh", "f"),
			s("HGETALL", "h"), s("HKEYS", "h"), s("HVALS", "h"), s("HLEN", "h"), s("HEXISTS", "h", "f1"), s("HEXISTS", "h", "x"), s("HMGET", "h", "f1", "x", "f3"),
			s("HDEL", "h", "f1", "x"), s("HGETALL", "h"), s("HSETNX", "h", "f2", "z"), s("HSETNX", "h", "f9", "z"), s("HINCRBY", "h", "c", "5"),
			s("HINCRBY", "h", "c", "-7"), s("HINCRBY", "h", "f2", "1"), s("HINCRBY", "h", "c", "x"), s("HSET", "h", "big", "9223372036854775807"),
			s("HINCRBY", "h", "big", "1"), s("HMSET", "h", "a", "1", "b", "2"), s("HGETALL", "h"), s("HDEL", "h", "f2", "f3", "f9", "c", "big", "a", "b"),
			s("EXISTS", "h"), s("HGETALL", "h"), s("HSET", "h", "f"), s("HSET", "h"), s("HSET", "h", "a", "1", "b"), s("HGET", "h"), s("HDEL", "h"),
			s("HGETALL"), s("HINCRBY", "h", "f"), s("HMGET", "h"), s("HSETNX", "h", "f"), s("HKEYS"), s("HLEN", "a", "b"), s("HEXISTS", "h"),
		}},
		{"lists", []step{
			s("LPUSH", "l", "a", "b", "c"), s("RPUSH", "l", "x", "y"), s("LRANGE", "l", "0", "-1"), s("LRANGE", "l", "1", "2"), s("LRANGE", "l", "-2", "100"),
			s("LRANGE", "l", "5", "10"), s("LRANGE", "l", "x", "1"), s("LLEN", "l"), s("LPOP", "l"), s("RPOP", "l"), s("LPOP", "l", "2"), s("RPOP", "l", "5"),
			s("EXISTS", "l"), s("LPOP", "l"), s("LPOP", "l", "2"), s("LLEN", "l"), s("LRANGE", "l", "0", "-1"), s("LPUSH", "l"), s("LPOP"), s("LPOP", "l", "-1"),
			s("LRANGE", "l", "0"),
		}},
		{"keys-scan", []step{
			s("SET", "user:1", "a"), s("SET", "user:2", "b"), s("HSET", "uh", "f", "v"), step{args: []string{"KEYS", "user:*"}, mode: sorted},
			s("KEYS", "user:1"), s("KEYS", "nomatch*"), step{args: []string{"KEYS", "*"}, mode: sorted}, s("KEYS", "u?er:[1]"), s("KEYS", "user:[^1]"),
			s("KEYS", "user:[0-1]"), s("KEYS"), s("SCAN", "0", "MATCH", "uh"), s("SCAN", "0", "TYPE", "hash"), s("SCAN", "0", "COUNT", "0"), s("SCAN", "x"), shape("SCAN", "-1"), s("SCAN", "-x"), shape("SCAN", "-1", "COUNT", "5"),
			s("SCAN", "0", "MATCH"), s("SCAN", "0", "BOGUS", "1"), s("SCAN"), s("FLUSHDB"), s("SCAN", "0"), s("SET", "only", "1"), s("SCAN", "0"),
		}},
		{"multi", []step{
			s("MULTI"), s("SET", "t", "1"), s("INCR", "t"), s("GET", "t"), s("HSET", "th", "f", "v"), s("EXEC"), s("EXEC"), s("DISCARD"),
			s("MULTI"), s("MULTI"), s("SET", "t", "2"), s("DISCARD"), s("GET", "t"), s("MULTI"), s("SET", "t"), s("INCR", "t"), s("EXEC"), s("GET", "t"),
			s("MULTI"), s("NOSUCH"), s("EXEC"), s("MULTI"), s("INCR", "th"), s("SET", "t", "3"), s("EXEC"), s("GET", "t"),
			s("WATCH", "t"), s("SET", "t", "4"), s("MULTI"), s("GET", "t"), s("EXEC"), s("WATCH", "t"), s("MULTI"), s("WATCH", "t"), s("GET", "t"), s("EXEC"),
			s("WATCH", "t", "u"), s("UNWATCH"), s("SET", "t", "5"), s("MULTI"), s("GET", "t"), s("EXEC"), s("WATCH", "nokey"), s("MULTI"), s("SET", "nokey", "1"),
			s("EXEC"), s("WATCH"), s("UNWATCH", "x"), s("MULTI", "x"), s("EXEC", "x"), s("MULTI"), s("EVAL", "return redis.call('incr', KEYS[1])", "1", "t"), s("EXEC"),
			s("WATCH", "t"), s("FLUSHALL"), s("MULTI"), s("PING"), s("EXEC"), masked("HELLO", "3"), s("WATCH", "t"), s("SET", "t", "1"), s("MULTI"), s("EXEC"),
			s("MULTI"), s("HGETALL", "th"), s("HSET", "th", "f", "v"), s("HGETALL", "th"), s("EXEC"),
		}},
		{"zsets", []step{
			s("ZADD", "z", "1", "a", "2", "b", "0.1", "c"), s("ZADD", "z", "3", "b", "1", "a"), s("ZRANGE", "z", "0", "-1", "WITHSCORES"),
			s("ZADD", "z", "CH", "5", "a", "7", "n"), s("ZADD", "z", "NX", "9", "a", "8", "m"), s("ZADD", "z", "XX", "9", "a", "8", "q"),
			s("ZADD", "z", "GT", "1", "a", "20", "b", "4", "r"), s("ZADD", "z", "GT", "CH", "1", "a", "21", "b"), s("ZADD", "z", "LT", "CH", "1", "a", "30", "b"),
			s("ZADD", "z", "XX", "GT", "50", "a", "50", "nosuch"), s("ZREVRANGE", "z", "0", "0", "WITHSCORES"), s("ZREVRANGE", "z", "0", "-1"),
			s("ZADD", "z", "INCR", "2.5", "a"), s("ZADD", "z", "GT", "INCR", "-1", "a"), s("ZADD", "z", "NX", "INCR", "1", "a"), s("ZADD", "z", "XX", "INCR", "1", "zz"),
			s("ZINCRBY", "z", "1", "a"), s("ZINCRBY", "z", "x", "a"), s("ZINCRBY", "z", "inf", "a"), s("ZINCRBY", "z", "-inf", "a"), s("ZSCORE", "z", "a"),
			s("ZADD", "hex", "0x1p3", "a", "infinity", "b", "-INF", "c", "+1.5e2", "d"), s("ZRANGE", "hex", "0", "-1", "WITHSCORES"),
			s("ZADD", "z", "0x10", "h", "1e20", "e", "1796040000000000", "t", "-inf", "i", "+inf", "j", "-0", "k", "1e-5", "l", ".5", "o", "5.", "p"),
			s("ZRANGE", "z", "0", "-1", "WITHSCORES"), s("ZRANGE", "z", "-3", "-2", "REV", "WITHSCORES"), s("ZRANGE", "z", "2", "1"), s("ZRANGE", "z", "100", "200"),
			s("ZRANGE", "z", "-100", "1", "withscores"), s("ZRANGE", "nokey", "0", "-1"), s("ZRANGE", "z", "x", "1"), s("ZRANGE", "z", "0", "1", "LIMIT", "0", "1"),
			s("ZRANGE", "z", "0", "1", "BOGUS"), s("ZREVRANGE", "z", "0", "1", "REV"), s("ZREVRANGE", "z", "0", "1", "LIMIT", "0", "1"),
			s("ZRANGE", "z", "0", "1", "LIMIT", "x", "1"), s("ZADD", "z", "1_000", "x"), s("ZADD", "z", " 1", "x"), s("ZADD", "z", "1 ", "x"),
			s("ZADD", "z", "1e400", "x"), s("ZADD", "z", "1e-400", "x"), s("ZADD", "z", "nan", "x"), s("ZADD", "z", "0e-400", "x"), s("ZSCORE", "z", "x"),
			s("ZADD", "z", "XX", "NX", "1", "a"), s("ZADD", "z", "GT", "LT", "1", "a"), s("ZADD", "z", "GT", "NX", "1", "a"), s("ZADD", "z", "INCR", "1", "a", "2", "b"),
			s("ZADD", "z", "1"), s("ZADD", "z", "1", "a", "2"), s("ZADD", "z", "CH", "x"), s("ZADD", "z", "1", "a", "y", "b"), s("ZSCORE", "z", "nosuch"),
			s("ZSCORE", "nokey", "a"), s("ZCARD", "z"), s("ZCARD", "nokey"), s("ZREM", "z", "a", "nosuch", "b"), s("ZREM", "nokey", "a"), s("TYPE", "z"),
			s("SET", "str", "v"), s("ZADD", "str", "1", "a"), s("ZRANGE", "str", "0", "-1"), s("ZSCORE", "str", "a"), s("ZCARD", "str"), s("ZREM", "str", "a"),
			s("GET", "z"), s("SET", "z", "x", "GET"), s("HGET", "z", "f"), s("LPUSH", "z", "a"), s("ZADD", "one", "1", "m"), s("ZREM", "one", "m"), s("EXISTS", "one"),
			s("ZADD", "e", "XX", "1", "m"), s("EXISTS", "e"), s("ZADD", "e", "XX", "INCR", "1", "m"), s("ZADD", "e", "GT", "5", "m"), s("ZRANGE", "e", "0", "0", "WITHSCORES"),
			s("ZADD", "inf", "inf", "m"), s("ZINCRBY", "inf", "-inf", "m"), s("ZADD", "inf", "INCR", "-inf", "m"), s("ZSCORE", "inf", "m"),
			s("ZADD", "ties", "1", "b", "1", "a", "1", "c", "0", "z"), s("ZREVRANGE", "ties", "0", "-1", "WITHSCORES"), s("ZRANGE", "ties", "0", "-1"),
			s("WATCH", "ties"), s("ZADD", "ties", "GT", "-5", "b"), s("ZREM", "ties", "nosuch"), s("MULTI"), s("PING"), s("EXEC"),
			s("WATCH", "ties"), s("ZADD", "ties", "CH", "99", "b"), s("MULTI"), s("PING"), s("EXEC"),
			s("WATCH", "ties"), s("ZREM", "ties", "b"), s("MULTI"), s("PING"), s("EXEC"),
			s("ZSCORE"), s("ZCARD"), s("ZREM", "z"), s("ZRANGE", "z", "0"), s("ZREVRANGE", "z"), s("ZINCRBY", "z", "1"),
		}},
		{"zsets-resp3-multi-lua", []step{
			s("ZADD", "f:fz", "5", "tagA", "7", "tagB"), s("EVAL", "return redis.call('zrevrange', KEYS[1], 0, 0, 'withscores')", "1", "f:fz"),
			s("EVAL", "return redis.call('zscore', KEYS[1], 'tagA')", "1", "f:fz"), s("EVAL", "return redis.call('zadd', KEYS[1], 'incr', 1, 'tagA')", "1", "f:fz"),
			s("EVAL", "return redis.call('zadd', KEYS[1], 'gt', 'ch', 1, 'tagA', 9, 'tagB')", "1", "f:fz"), s("EVAL", "return redis.pcall('zadd', KEYS[1], 'x', 'y')", "1", "f:fz"),
			s("MULTI"), s("SET", "f", "v1", "NX", "PX", "30000"), s("ZREVRANGE", "f:fz", "0", "0", "WITHSCORES"), s("ZADD", "f:fz", "XX", "GT", "100", "tagA"), s("EXEC"),
			s("MULTI"), s("SET", "f", "v2", "NX", "PX", "30000"), s("ZREVRANGE", "f:fz", "0", "0", "WITHSCORES"), s("ZADD", "f:fz", "GT", "50", "tagC"), s("EXEC"),
			s("MULTI"), s("SET", "f", "v2", "NX", "PX", "30000"), s("ZREVRANGE", "f", "0", "0", "WITHSCORES"), s("ZADD", "f:fz", "GT", "1"), s("EXEC"),
			masked("HELLO", "3"), s("ZRANGE", "f:fz", "0", "-1", "WITHSCORES"), s("ZREVRANGE", "f:fz", "0", "0", "WITHSCORES"), s("ZRANGE", "f:fz", "0", "-1"),
			s("ZSCORE", "f:fz", "tagA"), s("ZSCORE", "f:fz", "none"), s("ZADD", "f:fz", "INCR", "0.5", "tagA"), s("ZADD", "f:fz", "GT", "INCR", "-1", "tagA"),
			s("ZINCRBY", "f:fz", "inf", "tagC"), s("ZINCRBY", "f:fz", "-1e308", "tagB"), s("ZRANGE", "f:fz", "0", "-1", "WITHSCORES"), s("ZRANGE", "nokey", "0", "-1"),
			s("MULTI"), s("SET", "g", "v1", "NX", "PX", "30000"), s("ZREVRANGE", "g:fz", "0", "0", "WITHSCORES"), s("ZADD", "g:fz", "GT", "100", "tagA"), s("EXEC"),
			s("MULTI"), s("SET", "g", "v1", "NX", "PX", "30000"), s("ZREVRANGE", "g:fz", "0", "0", "WITHSCORES"), s("ZADD", "g:fz", "XX", "GT", "200", "tagA"), s("EXEC"),
			s("EVAL", "return redis.call('zrange', KEYS[1], 0, -1, 'withscores')", "1", "g:fz"), s("EVAL", "return redis.call('zscore', KEYS[1], 'tagA')", "1", "g:fz"),
		}},
		{"resp3-more", []step{
			masked("HELLO", "3"), s("HSET", "h", "a", "1", "b", "2"), s("HGETALL", "h"), s("HGETALL", "noh"), s("HGET", "h", "x"), s("LPOP", "nol"), s("LPOP", "nol", "2"),
			s("EVAL", "return false", "0"), s("EVAL", "return nil", "0"), s("EVAL", "return {1, false, 'x'}", "0"), s("EVAL", "return redis.call('hgetall', 'h')", "0"),
			s("EVAL", "return redis.call('get', 'nokey')", "0"), s("GETDEL", "nokey"), s("PUBLISH", "ch", "m"),
		}},
		{"unknown-more", []step{s("NOSUCHCMD", "k", "0"), s("nosuch_x", "a", "b"), s("Get", "k"), s("GET", "k", "extra"), s("PUBLISH", "ch"), s("PUBLISH", "ch", "m")}},
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
			_ = c.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
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
	seqs := append(diffSequences(), scriptSequences()...)
	seqs = append(seqs, sequence{"zsets-random", zsetRandomSteps(rand.New(rand.NewPCG(47, 1)), 400)})
	n := diffRun(t, seqs, real.Addr, fake.Addr(), "")
	if n < 60 {
		t.Fatalf("only %d commands compared", n)
	}
	names, bodies, scriptSteps := map[string]bool{}, map[string]bool{}, 0
	for _, seq := range seqs {
		for _, st := range seq.steps {
			if len(st.args) == 0 {
				continue
			}
			names[strings.ToLower(st.args[0])] = true
			switch {
			case strings.EqualFold(st.args[0], "eval") && len(st.args) > 1:
				bodies[st.args[1]] = true
				scriptSteps++
			case strings.EqualFold(st.args[0], "evalsha"):
				scriptSteps++
			case strings.EqualFold(st.args[0], "script") && len(st.args) > 2 && strings.EqualFold(st.args[1], "load"):
				bodies[st.args[2]] = true
				scriptSteps++
			}
		}
	}
	t.Logf("%d commands compared (%d command names); %d EVAL/EVALSHA/SCRIPT LOAD steps with %d distinct scripts", n, len(names), scriptSteps, len(bodies))
}

func TestDifferentialRealRedisPassword(t *testing.T) {
	const pw = "s3cret-pw"
	real := redistest.Start(t, redistest.Options{Password: pw})
	fake := startNode(t, Config{Password: pw, DisableAdmin: true})
	seqs := []sequence{{"requirepass", []step{
		s("GET", "k"), s("PING"), s("HELLO", "3"), s("FOO"), s("GET"), s("AUTH", "wrong"), s("AUTH", "default", "wrong"),
		s("HELLO", "3", "AUTH", "default", "wrong"), s("GET", "k"), s("HELLO", "3", "AUTH", "", pw), s("AUTH", "", pw),
		s("GET", "k"), masked("HELLO", "3", "AUTH", "default", pw),
		s("GET", "k"), s("AUTH", pw), s("AUTH", "default", pw), s("SET", "k", "v"), s("GET", "k"), s("QUIT"),
	}}, {"unauth-args", []step{
		s("ECHO", "1", "2", "3", "4", "5", "6", "7", "8", "9"), raw("*12\r\n", true),
	}}, {"unauth-bulk", []step{
		s("ECHO", strings.Repeat("x", 16384)), raw("*2\r\n$4\r\nECHO\r\n$16385\r\n", true),
	}}, {"auth-then-big", []step{
		raw(string(enc("AUTH", pw))+string(enc("ECHO", strings.Repeat("y", 20000))), false), s("ECHO", strings.Repeat("y", 20000)),
	}}}
	diffRun(t, seqs, real.Addr, fake.Addr(), pw)
}

// zsetRandomSteps draws n sorted-set commands over 3 keys and 12 members,
// each with random flags, scores (ties, signs, fractions, infinities) and
// ranges, so the fake's order, flags and replies meet a real server's on
// sets that grow and shrink; every 40 steps the connection switches
// between RESP2 and RESP3.
func zsetRandomSteps(rng *rand.Rand, n int) []step {
	scores := []string{"0", "1", "-1", "2.5", "1e3", "-0.125", "inf", "-inf", "7", "3", "100", "0.1"}
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	var out []step
	proto := "2"
	for i := 0; i < n; i++ {
		if i%40 == 39 {
			proto = map[string]string{"2": "3", "3": "2"}[proto]
			out = append(out, masked("HELLO", proto))
		}
		key := pick("za", "zb", "zc")
		mem := func() string { return "m" + strconv.Itoa(rng.IntN(12)) }
		switch rng.IntN(8) {
		case 0, 1, 2:
			args := []string{"ZADD", key}
			for _, f := range []string{"NX", "XX", "GT", "LT", "CH", "INCR"} {
				if rng.IntN(5) == 0 {
					args = append(args, f)
				}
			}
			for k := 1 + rng.IntN(3); k > 0; k-- {
				args = append(args, scores[rng.IntN(len(scores))], mem())
			}
			out = append(out, s(args...))
		case 3:
			out = append(out, s("ZINCRBY", key, pick(scores...), mem()))
		case 4:
			out = append(out, s("ZREM", key, mem(), mem()))
		case 5:
			out = append(out, s("ZSCORE", key, mem()), s("ZCARD", key))
		default:
			a, b := strconv.Itoa(rng.IntN(16)-8), strconv.Itoa(rng.IntN(16)-8)
			args := []string{pick("ZRANGE", "ZREVRANGE"), key, a, b}
			if rng.IntN(2) == 0 {
				args = append(args, "WITHSCORES")
			}
			if args[0] == "ZRANGE" && rng.IntN(3) == 0 {
				args = append(args, "REV")
			}
			out = append(out, s(args...))
		}
	}
	return append(out, s("ZRANGE", "za", "0", "-1", "WITHSCORES"), s("ZRANGE", "zb", "0", "-1", "WITHSCORES"), s("ZRANGE", "zc", "0", "-1", "WITHSCORES"))
}

// fencedAcquireSteps runs redlock's fencing commands through every branch,
// reading the counters after each: the acquire script (several resources,
// a Redis Cluster node) and the single lock's transaction (MULTI, SET NX
// PX, ZREVRANGE, ZADD [XX] GT CH, EXEC) on no counter, a lower one of this
// incarnation, a higher one, one of another incarnation (strict and not),
// an untagged one, one that is no counter, one at the tokens' bound, one
// of the string form redmux wrote before (converted, number kept; junk
// made stale), and a refusal; then the write-back (guard refused, members
// that are no counters removed, another member at or above the token) and
// FenceMigrate.
func fencedAcquireSteps() []step {
	af, wb, mg := scripts.AcquireFenced, scripts.FenceWriteBack, scripts.FenceMigrate
	tag, other := strings.Repeat("ab", 20), strings.Repeat("cd", 20)
	acq := func(key, val, guess, tg string) step {
		return s("EVAL", af.Text, "2", key, key+":fence", val, "30000", guess, tg)
	}
	read := func(keys ...string) []step {
		var out []step
		for _, k := range keys {
			out = append(out, s("TYPE", k), s("ZRANGE", k, "0", "-1", "WITHSCORES"))
		}
		return out
	}
	txn := func(key, val, guess, tg string) []step {
		zadd := []string{"ZADD", key + ":fence", "GT", "CH", guess, strings.TrimPrefix(tg, "=")}
		if strings.HasPrefix(tg, "=") {
			zadd = []string{"ZADD", key + ":fence", "XX", "GT", "CH", guess, tg[1:]}
		}
		return []step{s("MULTI"), s("SET", key, val, "NX", "PX", "30000"), s("ZREVRANGE", key+":fence", "0", "0", "WITHSCORES"), s(zadd...), s("EXEC")}
	}
	out := []step{s("DEL", "f", "f:fence")}
	for _, c := range []struct{ str, zset []string }{
		{},
		{zset: []string{"50", tag}},
		{zset: []string{"500", tag}},
		{zset: []string{"100", tag}},
		{zset: []string{"50", other}},
		{zset: []string{"50", ""}},
		{zset: []string{"5.5", tag}},
		{zset: []string{"9007199254740992", tag}},
		{zset: []string{"50", tag, "70", other}},
		{str: []string{"50:" + tag}},
		{str: []string{"50"}},
		{str: []string{"x50"}},
		{str: []string{"9007199254740992:" + tag}},
	} {
		for _, tg := range []string{"=" + tag, tag, ""} {
			for _, form := range []string{"script", "txn"} {
				out = append(out, s("DEL", "f", "f:fence"))
				if c.str != nil {
					out = append(out, s("SET", "f:fence", c.str[0]))
				}
				if c.zset != nil {
					out = append(out, s(append([]string{"ZADD", "f:fence"}, c.zset...)...))
				}
				if form == "script" {
					out = append(out, acq("f", "v1", "100", tg), acq("f", "v2", "100", tg))
				} else {
					out = append(out, txn("f", "v1", "100", tg)...)
					out = append(out, txn("f", "v2", "100", tg)...)
				}
				out = append(out, read("f:fence")...)
				out = append(out, s("GET", "f"))
			}
		}
	}
	out = append(out, s("DEL", "f", "f:fence"), acq("f", "v1", "0", ""), read("f:fence")[1])
	// several resources: every counter read, raised only together
	out = append(out, s("DEL", "a", "b", "a:fence", "b:fence"), s("ZADD", "b:fence", "70", tag), s("SET", "a:fence", "20:"+tag),
		s("EVAL", af.Text, "4", "a", "b", "a:fence", "b:fence", "v1", "30000", "100", "="+tag), s("GET", "a"), s("GET", "b"))
	out = append(out, read("a:fence", "b:fence")...)
	out = append(out, s("SET", "b", "x"), s("EVAL", af.Text, "4", "a", "b", "a:fence", "b:fence", "v2", "30000", "200", tag))
	out = append(out, read("a:fence", "b:fence")...)
	// the write-back
	wback := func(val, token, tg string) step {
		return s("EVAL", wb.Text, "4", "a", "b", "a:fence", "b:fence", val, token, tg)
	}
	out = append(out, wback("nope", "300", "="+tag))
	out = append(out, read("a:fence", "b:fence")...)
	out = append(out, s("SET", "b", "v1"), s("ZADD", "a:fence", "5.5", "junk", "1e300", "big", "40", other), s("ZADD", "b:fence", "400", other),
		wback("v1", "300", "="+tag))
	out = append(out, read("a:fence", "b:fence")...)
	out = append(out, wback("v1", "350", tag), s("ZADD", "b:fence", "900", ""), wback("v1", "350", ""))
	out = append(out, read("a:fence", "b:fence")...)
	out = append(out, s("DEL", "a:fence"), s("SET", "a:fence", "x"), wback("v1", "10", tag))
	out = append(out, read("a:fence")...)
	// FenceMigrate
	out = append(out, s("DEL", "a:fence", "b:fence"), s("SET", "a:fence", "77:"+other), s("ZADD", "b:fence", "5", tag),
		s("EVAL", mg.Text, "3", "a:fence", "b:fence", "c:fence"), s("EVAL", mg.Text, "1", "a:fence"))
	out = append(out, read("a:fence", "b:fence", "c:fence")...)
	return out
}
