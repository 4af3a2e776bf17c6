package resp_test

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redmux/redmux/internal/redisproc/redistest"
	"github.com/redmux/redmux/resp"
)

// rconn is a minimal RESP client over a plain net.Conn, built only from
// this package's encoder and parser. It reads in small chunks so real
// replies arrive split across reads and exercise ErrIncomplete.
type rconn struct {
	t     *testing.T
	c     net.Conn
	buf   []byte
	chunk int
	p     resp.Parser
}

func dialRedis(t *testing.T, addr string, chunk int) *rconn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return &rconn{t: t, c: c, chunk: chunk, p: resp.Parser{MaxBulkLen: 1 << 20, MaxAggregateLen: 1 << 16, MaxDepth: 16}}
}

func (c *rconn) send(args ...string) {
	c.t.Helper()
	_ = c.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.c.Write(resp.AppendCommand(nil, args...)); err != nil {
		c.t.Fatalf("write %v: %v", args, err)
	}
}

// read returns the next reply, parsed from a private copy of its bytes.
func (c *rconn) read() resp.Reply {
	c.t.Helper()
	tmp := make([]byte, c.chunk)
	incompletes := 0
	for {
		_, n, err := c.p.Parse(c.buf)
		if err == nil {
			frame := append([]byte(nil), c.buf[:n]...)
			c.buf = append(c.buf[:0], c.buf[n:]...)
			r, n2, err := c.p.Parse(frame)
			if err != nil || n2 != n || len(r.Attr)+len(r.Raw) != n {
				c.t.Fatalf("re-parse: %v", err)
			}
			return r
		}
		if !errors.Is(err, resp.ErrIncomplete) {
			c.t.Fatalf("parse %q: %v", c.buf, err)
		}
		incompletes++
		_ = c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
		m, err := c.c.Read(tmp)
		if err != nil {
			c.t.Fatalf("read (%d bytes buffered %q): %v", len(c.buf), c.buf, err)
		}
		c.buf = append(c.buf, tmp[:m]...)
	}
}

func (c *rconn) do(args ...string) resp.Reply {
	c.t.Helper()
	c.send(args...)
	return c.read()
}

// expect checks a reply's type and Value.
func expect(t *testing.T, what string, r resp.Reply, typ byte, want any) {
	t.Helper()
	if r.Type != typ {
		t.Errorf("%s: type %q (%s), want %q (%s); reply %q", what, r.Type, resp.TypeName(r.Type), typ, resp.TypeName(typ), r.Raw)
		return
	}
	if want == skipValue {
		return
	}
	if got := r.Value(); !sameValue(got, want) {
		t.Errorf("%s: Value = %#v, want %#v", what, got, want)
	}
}

var skipValue = new(int)

func sameValue(a, b any) bool {
	switch x := a.(type) {
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameValue(x[i], y[i]) {
				return false
			}
		}
		return true
	case []resp.KV:
		y, ok := b.([]resp.KV)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameValue(x[i].Key, y[i].Key) || !sameValue(x[i].Value, y[i].Value) {
				return false
			}
		}
		return true
	}
	return a == b
}

// mapGet returns the value of key in a map (or RESP2 flat array) reply.
func mapGet(t *testing.T, r resp.Reply, key string) resp.Reply {
	t.Helper()
	it := r.Iter()
	var k, v resp.Reply
	for it.Next(&k) && it.Next(&v) {
		if string(k.Data) == key {
			return v
		}
	}
	t.Fatalf("key %q not in %v", key, r.Value())
	return resp.Reply{}
}

// TestRealRedis talks to a real redis-server in RESP2, then after HELLO 3
// in RESP3, and parses real replies of every type the server produces.
func TestRealRedis(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{Extra: []string{"--enable-debug-command", "yes"}})
	c := dialRedis(t, srv.Addr, 7)

	// RESP2.
	expect(t, "PING", c.do("PING"), '+', "PONG")
	if r := c.do("SET", "k", "v\r\nx"); !r.IsOK() {
		t.Errorf("SET: %v", r)
	}
	expect(t, "GET", c.do("GET", "k"), '$', "v\r\nx")
	r := c.do("GET", "missing")
	expect(t, "GET missing", r, '$', nil)
	if !r.IsNil() || r.N != -1 {
		t.Errorf("null bulk: %+v", r)
	}
	c.do("SET", "empty", "")
	r = c.do("GET", "empty")
	expect(t, "GET empty", r, '$', "")
	if r.IsNil() {
		t.Errorf("empty bulk reported nil")
	}
	expect(t, "INCR", c.do("INCR", "n"), ':', int64(1))
	expect(t, "INCRBY", c.do("INCRBY", "n", "-10"), ':', int64(-9))
	c.do("SET", "max", "9223372036854775806")
	expect(t, "INCR to max", c.do("INCR", "max"), ':', int64(9223372036854775807))
	r = c.do("INCR", "max")
	expect(t, "INCR overflow", r, '-', skipValue)
	if !r.HasErrorPrefix("ERR") {
		t.Errorf("overflow error: %q", r.Data)
	}
	r = c.do("LPUSH", "k", "x")
	if !r.HasErrorPrefix("WRONGTYPE") {
		t.Errorf("WRONGTYPE: %v", r)
	}
	r = c.do("EVALSHA", strings.Repeat("f", 40), "0")
	if !r.HasErrorPrefix("NOSCRIPT") {
		t.Errorf("NOSCRIPT: %v", r)
	}
	r = c.do("NOSUCHCOMMAND")
	if !r.HasErrorPrefix("ERR") || !r.IsError() {
		t.Errorf("unknown command: %v", r)
	}
	expect(t, "RPUSH", c.do("RPUSH", "l", "a", "", "c"), ':', int64(3))
	expect(t, "LRANGE", c.do("LRANGE", "l", "0", "-1"), '*', []any{"a", "", "c"})
	expect(t, "LRANGE missing", c.do("LRANGE", "nolist", "0", "-1"), '*', []any{})
	r = c.do("BLPOP", "nolist", "0.01")
	expect(t, "BLPOP timeout (RESP2)", r, '*', nil)
	if !r.IsNil() || r.N != -1 {
		t.Errorf("null array: %+v", r)
	}
	c.do("ZADD", "z", "1.5", "m")
	expect(t, "ZSCORE (RESP2)", c.do("ZSCORE", "z", "m"), '$', "1.5")
	expect(t, "INCRBYFLOAT", c.do("INCRBYFLOAT", "f", "2.5"), '$', "2.5")
	expect(t, "EVAL nested", c.do("EVAL", "return {1,'two',{3,{}}}", "0"), '*', []any{int64(1), "two", []any{int64(3), []any{}}})
	expect(t, "EVAL true (RESP2)", c.do("EVAL", "return true", "0"), ':', int64(1))
	expect(t, "EVAL false (RESP2)", c.do("EVAL", "return false", "0"), '$', nil)
	c.do("HSET", "h", "a", "1", "b", "2")
	expect(t, "HGETALL (RESP2)", c.do("HGETALL", "h"), '*', []any{"a", "1", "b", "2"})

	// A pipeline: 200 commands written at once, replies parsed back to back.
	var pipe []byte
	for i := 0; i < 200; i++ {
		pipe = resp.AppendCommand(pipe, "SET", "lock:"+strconv.Itoa(i%100), "value-"+strconv.Itoa(i), "NX", "PX", "30000")
	}
	if _, err := c.c.Write(pipe); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200; i++ {
		r := c.read()
		if i < 100 && !r.IsOK() || i >= 100 && !(r.IsNil() && r.Type == '$') {
			t.Fatalf("pipelined SET NX %d: %v", i, r)
		}
	}

	// HELLO 3 switches to RESP3: the reply is already a map.
	r = c.do("HELLO", "3")
	expect(t, "HELLO 3", r, '%', skipValue)
	expect(t, "HELLO proto", mapGet(t, r, "proto"), ':', int64(3))
	expect(t, "HELLO server", mapGet(t, r, "server"), '$', "redis")
	expect(t, "HELLO modules", mapGet(t, r, "modules"), '*', []any{})

	// RESP3.
	expect(t, "GET missing (RESP3)", c.do("GET", "missing"), '_', nil)
	expect(t, "BLPOP timeout (RESP3)", c.do("BLPOP", "nolist", "0.01"), '_', nil)
	r = c.do("ZSCORE", "z", "m")
	expect(t, "ZSCORE (RESP3)", r, ',', 1.5)
	if f, ok := r.Float(); !ok || f != 1.5 {
		t.Errorf("ZSCORE Float = %v %v", f, ok)
	}
	c.do("ZADD", "z", "inf", "top", "-inf", "bottom")
	expect(t, "ZSCORE inf", c.do("ZSCORE", "z", "top"), ',', posInf)
	expect(t, "ZSCORE -inf", c.do("ZSCORE", "z", "bottom"), ',', negInf)
	expect(t, "HGETALL (RESP3)", c.do("HGETALL", "h"), '%', []resp.KV{{Key: "a", Value: "1"}, {Key: "b", Value: "2"}})
	expect(t, "CONFIG GET", c.do("CONFIG", "GET", "maxmemory"), '%', []resp.KV{{Key: "maxmemory", Value: "0"}})
	c.do("SADD", "s", "x", "y")
	r = c.do("SMEMBERS", "s")
	expect(t, "SMEMBERS", r, '~', skipValue)
	if r.Len() != 2 {
		t.Errorf("SMEMBERS: %v", r.Value())
	}
	expect(t, "EVAL double", c.do("EVAL", "return {double=3.5}", "0"), ',', 3.5)
	expect(t, "EVAL true (RESP3)", c.do("EVAL", "redis.setresp(3); return true", "0"), '#', true)
	expect(t, "EVAL false (RESP3)", c.do("EVAL", "redis.setresp(3); return false", "0"), '#', false)
	expect(t, "EVAL nil (RESP3)", c.do("EVAL", "return nil", "0"), '_', nil)
	expect(t, "EVAL big number", c.do("EVAL", "return {big_number='-123456789012345678901234567890'}", "0"), '(', "-123456789012345678901234567890")
	expect(t, "EVAL map", c.do("EVAL", "return {map={a=1}}", "0"), '%', []resp.KV{{Key: "a", Value: int64(1)}})
	expect(t, "EVAL set", c.do("EVAL", "return {set={a=true}}", "0"), '~', []any{"a"})
	expect(t, "EVAL error", c.do("EVAL", "return redis.error_reply('MYERR custom')", "0"), '-', resp.Error("MYERR custom"))
	r = c.do("INFO", "server")
	expect(t, "INFO (RESP3)", r, '=', skipValue)
	if string(r.VerbatimFormat()) != "txt" || !strings.Contains(string(r.VerbatimText()), "redis_version:") {
		t.Errorf("INFO verbatim: %q", r.Raw)
	}
	r = c.do("CLIENT", "INFO")
	expect(t, "CLIENT INFO (RESP3)", r, '=', skipValue)
	if !strings.Contains(string(r.VerbatimText()), "resp=3") {
		t.Errorf("CLIENT INFO: %q", r.Raw)
	}

	// DEBUG PROTOCOL makes the server send one reply of each RESP3 type,
	// attributes included.
	expect(t, "DEBUG string", c.do("DEBUG", "PROTOCOL", "string"), '$', "Hello World")
	expect(t, "DEBUG integer", c.do("DEBUG", "PROTOCOL", "integer"), ':', int64(12345))
	expect(t, "DEBUG double", c.do("DEBUG", "PROTOCOL", "double"), ',', 3.141)
	r = c.do("DEBUG", "PROTOCOL", "bignum")
	expect(t, "DEBUG bignum", r, '(', "1234567999999999999999999999999999999")
	expect(t, "DEBUG null", c.do("DEBUG", "PROTOCOL", "null"), '_', nil)
	expect(t, "DEBUG array", c.do("DEBUG", "PROTOCOL", "array"), '*', []any{int64(0), int64(1), int64(2)})
	expect(t, "DEBUG set", c.do("DEBUG", "PROTOCOL", "set"), '~', []any{int64(0), int64(1), int64(2)})
	expect(t, "DEBUG map", c.do("DEBUG", "PROTOCOL", "map"), '%',
		[]resp.KV{{Key: int64(0), Value: false}, {Key: int64(1), Value: true}, {Key: int64(2), Value: false}})
	r = c.do("DEBUG", "PROTOCOL", "attrib")
	if len(r.Attr) == 0 {
		t.Errorf("DEBUG attrib: no attribute: %q", r.Raw)
	} else {
		a, ok := r.Attribute()
		want := []resp.KV{{Key: "key-popularity", Value: []any{"key:123", int64(90)}}}
		if !ok || !sameValue(a.Value(), want) {
			t.Errorf("attribute %q: %#v", r.Attr, a.Value())
		}
		t.Logf("DEBUG PROTOCOL attrib: attribute %q before %q", r.Attr, r.Raw)
	}
	expect(t, "DEBUG attrib reply", r, '$', skipValue)
	r = c.do("DEBUG", "PROTOCOL", "push")
	expect(t, "DEBUG push", r, '>', skipValue)
	expect(t, "DEBUG push's reply", c.read(), '$', "Some real reply following the push reply")
	r = c.do("DEBUG", "PROTOCOL", "verbatim")
	expect(t, "DEBUG verbatim", r, '=', "This is a verbatim\nstring")
	expect(t, "DEBUG true", c.do("DEBUG", "PROTOCOL", "true"), '#', true)
	expect(t, "DEBUG false", c.do("DEBUG", "PROTOCOL", "false"), '#', false)

	// Push frames from pub/sub and client-side caching.
	pub := dialRedis(t, srv.Addr, 4096)
	expect(t, "SUBSCRIBE", c.do("SUBSCRIBE", "ch"), '>', []any{"subscribe", "ch", int64(1)})
	expect(t, "PUBLISH", pub.do("PUBLISH", "ch", "hello"), ':', int64(1))
	expect(t, "message push", c.read(), '>', []any{"message", "ch", "hello"})
	expect(t, "UNSUBSCRIBE", c.do("UNSUBSCRIBE", "ch"), '>', []any{"unsubscribe", "ch", int64(0)})

	tr := dialRedis(t, srv.Addr, 64)
	tr.do("HELLO", "3")
	if r := tr.do("CLIENT", "TRACKING", "ON"); !r.IsOK() {
		t.Fatalf("CLIENT TRACKING ON: %v", r)
	}
	expect(t, "tracked GET", tr.do("GET", "tk"), '_', nil)
	pub.do("SET", "tk", "changed")
	expect(t, "invalidate push", tr.read(), '>', []any{"invalidate", []any{"tk"}})
}

var (
	posInf = func() float64 { f, _ := strconv.ParseFloat("inf", 64); return f }()
	negInf = -posInf
)
