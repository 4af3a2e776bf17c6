package resp

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
)

// validCase is one well-formed frame and what parsing it must give.
type validCase struct {
	name  string
	in    string
	typ   byte
	null  bool
	data  string // expected Reply.Data (ignored for aggregates and nulls)
	n     int64  // expected Reply.N
	value any    // expected Reply.Value()
	attr  string // expected Reply.Attr
	check func(t *testing.T, r Reply)
}

// validCases covers every type and its edge cases. Every test below that
// needs well-formed frames (splits, back to back, fuzz seeds) uses them.
var validCases = []validCase{
	// Simple strings and errors.
	{name: "ok", in: "+OK\r\n", typ: '+', data: "OK", value: "OK",
		check: func(t *testing.T, r Reply) { mustTrue(t, r.IsOK(), "IsOK") }},
	{name: "empty simple", in: "+\r\n", typ: '+', data: "", value: "",
		check: func(t *testing.T, r Reply) { mustTrue(t, !r.IsOK(), "!IsOK") }},
	{name: "okay is not ok", in: "+OKAY\r\n", typ: '+', data: "OKAY", value: "OKAY",
		check: func(t *testing.T, r Reply) { mustTrue(t, !r.IsOK(), "!IsOK") }},
	{name: "simple with spaces", in: "+hello world\r\n", typ: '+', data: "hello world", value: "hello world"},
	{name: "error", in: "-ERR unknown command 'FOO'\r\n", typ: '-', data: "ERR unknown command 'FOO'",
		value: Error("ERR unknown command 'FOO'"),
		check: func(t *testing.T, r Reply) {
			mustTrue(t, r.IsError(), "IsError")
			mustEq(t, string(r.ErrorPrefix()), "ERR")
			mustTrue(t, r.HasErrorPrefix("ERR"), "HasErrorPrefix ERR")
			mustTrue(t, !r.HasErrorPrefix("ER"), "!HasErrorPrefix ER")
		}},
	{name: "noscript", in: "-NOSCRIPT No matching script. Please use EVAL.\r\n", typ: '-',
		data: "NOSCRIPT No matching script. Please use EVAL.", value: Error("NOSCRIPT No matching script. Please use EVAL."),
		check: func(t *testing.T, r Reply) { mustTrue(t, r.HasErrorPrefix("NOSCRIPT"), "NOSCRIPT") }},
	{name: "error one word", in: "-LOADING\r\n", typ: '-', data: "LOADING", value: Error("LOADING"),
		check: func(t *testing.T, r Reply) { mustEq(t, string(r.ErrorPrefix()), "LOADING") }},

	// Integers.
	{name: "int one", in: ":1\r\n", typ: ':', data: "1", n: 1, value: int64(1)},
	{name: "int zero", in: ":0\r\n", typ: ':', data: "0", n: 0, value: int64(0)},
	{name: "int minus one is not nil", in: ":-1\r\n", typ: ':', data: "-1", n: -1, value: int64(-1),
		check: func(t *testing.T, r Reply) { mustTrue(t, !r.IsNil(), "!IsNil") }},
	{name: "int 18 digits", in: ":-999999999999999999\r\n", typ: ':', data: "-999999999999999999", n: -999999999999999999, value: int64(-999999999999999999)},
	{name: "int 19 digits", in: ":1000000000000000000\r\n", typ: ':', data: "1000000000000000000", n: 1000000000000000000, value: int64(1000000000000000000)},
	{name: "int negative", in: ":-42\r\n", typ: ':', data: "-42", n: -42, value: int64(-42)},
	{name: "int plus sign", in: ":+7\r\n", typ: ':', data: "+7", n: 7, value: int64(7)},
	{name: "int minus zero", in: ":-0\r\n", typ: ':', data: "-0", n: 0, value: int64(0)},
	{name: "int leading zeros", in: ":007\r\n", typ: ':', data: "007", n: 7, value: int64(7)},
	{name: "int64 max", in: ":9223372036854775807\r\n", typ: ':', data: "9223372036854775807", n: math.MaxInt64, value: int64(math.MaxInt64)},
	{name: "int64 min", in: ":-9223372036854775808\r\n", typ: ':', data: "-9223372036854775808", n: math.MinInt64, value: int64(math.MinInt64)},

	// Bulk strings.
	{name: "bulk", in: "$5\r\nhello\r\n", typ: '$', data: "hello", n: 5, value: "hello"},
	{name: "empty bulk", in: "$0\r\n\r\n", typ: '$', data: "", n: 0, value: "",
		check: func(t *testing.T, r Reply) {
			mustTrue(t, !r.IsNil(), "empty bulk is not nil")
			mustTrue(t, r.Data != nil, "empty bulk has non-nil Data")
			mustTrue(t, r.Equal(nil), "Equal(empty)")
		}},
	{name: "null bulk", in: "$-1\r\n", typ: '$', null: true, n: -1, value: nil,
		check: func(t *testing.T, r Reply) {
			mustTrue(t, r.IsNil(), "IsNil")
			mustTrue(t, !r.Equal(nil), "null is not Equal")
		}},
	{name: "bulk 9-digit length header", in: "$000000003\r\nabc\r\n", typ: '$', data: "abc", n: 3, value: "abc"},
	{name: "bulk 10-digit length header", in: "$0000000003\r\nabc\r\n", typ: '$', data: "abc", n: 3, value: "abc"},
	{name: "bulk long simple", in: "+" + strings.Repeat("s", 40) + "\r\n", typ: '+', data: strings.Repeat("s", 40), value: strings.Repeat("s", 40)},
	{name: "simple 32 bytes", in: "+" + strings.Repeat("s", 32) + "\r\n", typ: '+', data: strings.Repeat("s", 32), value: strings.Repeat("s", 32)},
	{name: "bulk with CRLF inside", in: "$4\r\na\r\nb\r\n", typ: '$', data: "a\r\nb", n: 4, value: "a\r\nb"},
	{name: "bulk binary", in: "$3\r\n\x00\xff\n\r\n", typ: '$', data: "\x00\xff\n", n: 3, value: "\x00\xff\n"},
	{name: "bulk OK is not IsOK", in: "$2\r\nOK\r\n", typ: '$', data: "OK", n: 2, value: "OK",
		check: func(t *testing.T, r Reply) {
			mustTrue(t, !r.IsOK(), "!IsOK")
			mustTrue(t, r.Equal([]byte("OK")), "Equal")
		}},

	// Arrays.
	{name: "empty array", in: "*0\r\n", typ: '*', n: 0, value: []any{}},
	{name: "null array", in: "*-1\r\n", typ: '*', null: true, n: -1, value: nil,
		check: func(t *testing.T, r Reply) { mustTrue(t, r.IsNil(), "IsNil"); mustEq(t, r.Len(), 0) }},
	{name: "array mixed", in: "*3\r\n$1\r\na\r\n:1\r\n$-1\r\n", typ: '*', n: 3, value: []any{"a", int64(1), nil}},
	{name: "nested arrays", in: "*2\r\n*2\r\n:1\r\n:2\r\n*1\r\n%1\r\n+k\r\n~1\r\n#t\r\n", typ: '*', n: 2,
		value: []any{[]any{int64(1), int64(2)}, []any{[]KV{{"k", []any{true}}}}}},
	{name: "array of null arrays", in: "*2\r\n*-1\r\n*0\r\n", typ: '*', n: 2, value: []any{nil, []any{}}},

	// RESP3 scalars.
	{name: "resp3 null", in: "_\r\n", typ: '_', null: true, value: nil,
		check: func(t *testing.T, r Reply) { mustTrue(t, r.IsNil(), "IsNil") }},
	{name: "true", in: "#t\r\n", typ: '#', data: "t", n: 1, value: true,
		check: func(t *testing.T, r Reply) { v, ok := r.Bool(); mustTrue(t, v && ok, "Bool") }},
	{name: "false", in: "#f\r\n", typ: '#', data: "f", n: 0, value: false,
		check: func(t *testing.T, r Reply) { v, ok := r.Bool(); mustTrue(t, !v && ok, "Bool") }},
	{name: "double", in: ",3.14\r\n", typ: ',', data: "3.14", value: 3.14},
	{name: "double int form", in: ",10\r\n", typ: ',', data: "10", value: 10.0},
	{name: "double negative", in: ",-1.5\r\n", typ: ',', data: "-1.5", value: -1.5},
	{name: "double exponent", in: ",1.5e10\r\n", typ: ',', data: "1.5e10", value: 1.5e10},
	{name: "double exponent upper neg", in: ",2E-3\r\n", typ: ',', data: "2E-3", value: 2e-3},
	{name: "double exponent plus", in: ",1e+21\r\n", typ: ',', data: "1e+21", value: 1e21},
	{name: "double dot five", in: ",.5\r\n", typ: ',', data: ".5", value: 0.5},
	{name: "double five dot", in: ",5.\r\n", typ: ',', data: "5.", value: 5.0},
	{name: "double neg dot exp", in: ",-.5e+2\r\n", typ: ',', data: "-.5e+2", value: -50.0},
	{name: "double inf", in: ",inf\r\n", typ: ',', data: "inf", value: math.Inf(1)},
	{name: "double plus inf", in: ",+inf\r\n", typ: ',', data: "+inf", value: math.Inf(1)},
	{name: "double -inf", in: ",-inf\r\n", typ: ',', data: "-inf", value: math.Inf(-1)},
	{name: "double nan", in: ",nan\r\n", typ: ',', data: "nan", value: math.NaN()},
	{name: "double -nan", in: ",-nan\r\n", typ: ',', data: "-nan", value: math.NaN()},
	{name: "double overflow is inf", in: ",1e400\r\n", typ: ',', data: "1e400", value: math.Inf(1)},
	{name: "double underflow is zero", in: ",1e-400\r\n", typ: ',', data: "1e-400", value: 0.0},
	{name: "big number", in: "(3492890328409238509324850943850943825024385\r\n", typ: '(',
		data: "3492890328409238509324850943850943825024385", value: "3492890328409238509324850943850943825024385"},
	{name: "big number negative", in: "(-12345678901234567890123\r\n", typ: '(', data: "-12345678901234567890123", value: "-12345678901234567890123"},
	{name: "big number small", in: "(0\r\n", typ: '(', data: "0", value: "0"},
	{name: "bulk error", in: "!21\r\nSYNTAX invalid syntax\r\n", typ: '!', data: "SYNTAX invalid syntax", n: 21,
		value: Error("SYNTAX invalid syntax"),
		check: func(t *testing.T, r Reply) {
			mustTrue(t, r.IsError(), "IsError")
			mustTrue(t, r.HasErrorPrefix("SYNTAX"), "prefix")
		}},
	{name: "empty bulk error", in: "!0\r\n\r\n", typ: '!', data: "", n: 0, value: Error("")},
	{name: "verbatim", in: "=15\r\ntxt:Some string\r\n", typ: '=', data: "txt:Some string", n: 15, value: "Some string",
		check: func(t *testing.T, r Reply) {
			mustEq(t, string(r.VerbatimFormat()), "txt")
			mustEq(t, string(r.VerbatimText()), "Some string")
		}},
	{name: "verbatim empty text", in: "=4\r\nmkd:\r\n", typ: '=', data: "mkd:", n: 4, value: "",
		check: func(t *testing.T, r Reply) { mustEq(t, string(r.VerbatimFormat()), "mkd") }},
	{name: "verbatim with CRLF", in: "=9\r\ntxt:a\r\nbc\r\n", typ: '=', data: "txt:a\r\nbc", n: 9, value: "a\r\nbc"},

	// RESP3 aggregates.
	{name: "map", in: "%2\r\n+first\r\n:1\r\n+second\r\n:2\r\n", typ: '%', n: 2,
		value: []KV{{"first", int64(1)}, {"second", int64(2)}},
		check: func(t *testing.T, r Reply) { mustEq(t, r.Len(), 4) }},
	{name: "empty map", in: "%0\r\n", typ: '%', n: 0, value: []KV{}},
	{name: "map of arrays", in: "%2\r\n+a\r\n*2\r\n:1\r\n:2\r\n$1\r\nb\r\n*0\r\n", typ: '%', n: 2,
		value: []KV{{"a", []any{int64(1), int64(2)}}, {"b", []any{}}}},
	{name: "map with aggregate keys", in: "%1\r\n*1\r\n:1\r\n~0\r\n", typ: '%', n: 1,
		value: []KV{{[]any{int64(1)}, []any{}}}},
	{name: "set", in: "~3\r\n+a\r\n:1\r\n#f\r\n", typ: '~', n: 3, value: []any{"a", int64(1), false}},
	{name: "push", in: ">3\r\n$7\r\nmessage\r\n$7\r\nchannel\r\n$5\r\nhello\r\n", typ: '>', n: 3,
		value: []any{"message", "channel", "hello"}},
	{name: "push invalidate", in: ">2\r\n$10\r\ninvalidate\r\n*1\r\n$3\r\nkey\r\n", typ: '>', n: 2,
		value: []any{"invalidate", []any{"key"}}},
	{name: "push nested in nothing else, null inside", in: ">2\r\n+x\r\n_\r\n", typ: '>', n: 2, value: []any{"x", nil}},

	// Attributes ahead of a reply.
	{name: "attribute top level",
		in:  "|1\r\n+key-popularity\r\n%2\r\n$1\r\na\r\n,0.1923\r\n$1\r\nb\r\n,0.0012\r\n*2\r\n:2039123\r\n:9543892\r\n",
		typ: '*', n: 2, value: []any{int64(2039123), int64(9543892)},
		attr: "|1\r\n+key-popularity\r\n%2\r\n$1\r\na\r\n,0.1923\r\n$1\r\nb\r\n,0.0012\r\n",
		check: func(t *testing.T, r Reply) {
			a, n, err := Parse(r.Attr)
			if err == nil {
				t.Errorf("attribute alone parsed as complete (n=%d, %v)", n, a)
			}
			mustTrue(t, errors.Is(err, ErrIncomplete), "attribute alone is incomplete")
			at, ok := r.Attribute()
			mustTrue(t, ok, "Attribute")
			mustEq(t, at.Type, TypeAttribute)
			mustEq(t, at.Len(), 2)
			want := []KV{{"key-popularity", []KV{{"a", 0.1923}, {"b", 0.0012}}}}
			if v := at.Value(); !valueEqual(v, want) {
				t.Errorf("Attribute().Value() = %#v", v)
			}
			mustEq(t, string(r.Raw), "*2\r\n:2039123\r\n:9543892\r\n")
		}},
	{name: "attribute before scalar", in: "|1\r\n+ttl\r\n:3\r\n+OK\r\n", typ: '+', data: "OK", value: "OK",
		attr: "|1\r\n+ttl\r\n:3\r\n", check: func(t *testing.T, r Reply) { mustTrue(t, r.IsOK(), "IsOK after attribute") }},
	{name: "two attributes", in: "|1\r\n+a\r\n:1\r\n|0\r\n:5\r\n", typ: ':', data: "5", n: 5, value: int64(5),
		attr: "|1\r\n+a\r\n:1\r\n|0\r\n",
		check: func(t *testing.T, r Reply) {
			at, ok := r.Attribute()
			mustTrue(t, ok && valueEqual(at.Value(), []KV{{"a", int64(1)}}), "first Attribute")
			if _, ok := (Reply{}).Attribute(); ok {
				t.Errorf("Attribute of a reply without one")
			}
		}},
	{name: "attribute nested in array", in: "*2\r\n|1\r\n+ttl\r\n:3\r\n+val\r\n:5\r\n", typ: '*', n: 2,
		value: []any{"val", int64(5)},
		check: func(t *testing.T, r Reply) {
			c, ok := r.Elem(0)
			mustTrue(t, ok, "Elem(0)")
			mustEq(t, string(c.Attr), "|1\r\n+ttl\r\n:3\r\n")
			mustEq(t, string(c.Raw), "+val\r\n")
			c, _ = r.Elem(1)
			mustEq(t, len(c.Attr), 0)
		}},
	{name: "attribute nested in map value", in: "%1\r\n+k\r\n|1\r\n+x\r\n*1\r\n:1\r\n$1\r\nv\r\n", typ: '%', n: 1,
		value: []KV{{"k", "v"}}},
	{name: "attribute holding aggregates", in: "|1\r\n*1\r\n:1\r\n%1\r\n+a\r\n~1\r\n_\r\n_\r\n", typ: '_', null: true, value: nil,
		attr: "|1\r\n*1\r\n:1\r\n%1\r\n+a\r\n~1\r\n_\r\n"},
}

func mustTrue(t *testing.T, ok bool, what string) {
	t.Helper()
	if !ok {
		t.Errorf("%s: false", what)
	}
}

func mustEq[T comparable](t *testing.T, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("got %#v, want %#v", got, want)
	}
}

// valueEqual is reflect.DeepEqual for Value results, with NaN equal to NaN.
func valueEqual(a, b any) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		return ok && (x == y || (math.IsNaN(x) && math.IsNaN(y)))
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !valueEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case []KV:
		y, ok := b.([]KV)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !valueEqual(x[i].Key, y[i].Key) || !valueEqual(x[i].Value, y[i].Value) {
				return false
			}
		}
		return true
	}
	return a == b
}

func TestParseValid(t *testing.T) {
	for _, tc := range validCases {
		t.Run(tc.name, func(t *testing.T) {
			b := []byte(tc.in)
			r, n, err := Parse(b)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.in, err)
			}
			if n != len(b) {
				t.Fatalf("Parse(%q): n = %d, want %d", tc.in, n, len(b))
			}
			if r.Type != tc.typ {
				t.Errorf("Type = %q, want %q", r.Type, tc.typ)
			}
			if r.Null != tc.null {
				t.Errorf("Null = %v, want %v", r.Null, tc.null)
			}
			if r.IsAggregate() || r.Null {
				if r.Data != nil {
					t.Errorf("Data = %q, want nil", r.Data)
				}
			} else if string(r.Data) != tc.data {
				t.Errorf("Data = %q, want %q", r.Data, tc.data)
			}
			if r.N != tc.n && r.Type != TypeDouble && r.Type != TypeBigNumber && r.Type != TypeNull &&
				r.Type != TypeSimpleString && r.Type != TypeError {
				t.Errorf("N = %d, want %d", r.N, tc.n)
			}
			if (r.Attr == nil) != (tc.attr == "") {
				t.Errorf("Attr = %#v, want nil exactly when there is no attribute", r.Attr)
			}
			if string(r.Attr) != tc.attr {
				t.Errorf("Attr = %q, want %q", r.Attr, tc.attr)
			}
			if want := tc.in[len(tc.attr):]; string(r.Raw) != want {
				t.Errorf("Raw = %q, want %q", r.Raw, want)
			}
			if v := r.Value(); !valueEqual(v, tc.value) {
				t.Errorf("Value = %#v, want %#v", v, tc.value)
			}
			if r.String() == "" {
				t.Errorf("String is empty")
			}
			// Skip agrees with Parse, and the views point into b.
			if sn, err := (&Parser{}).Skip(b); err != nil || sn != n {
				t.Errorf("Skip = %d, %v; want %d", sn, err, n)
			}
			if len(r.Raw) > 0 && &r.Raw[len(r.Raw)-1] != &b[len(b)-1] {
				t.Errorf("Raw is not a view into the input")
			}
			// Iter visits Len children that together span the payload.
			if r.IsAggregate() {
				it := r.Iter()
				if it.Remaining() != r.Len() {
					t.Errorf("Remaining = %d, Len = %d", it.Remaining(), r.Len())
				}
				var c Reply
				k := 0
				for it.Next(&c) {
					k++
				}
				if k != r.Len() {
					t.Errorf("Iter visited %d, Len = %d", k, r.Len())
				}
				if _, ok := r.Elem(r.Len()); ok {
					t.Errorf("Elem(Len) ok")
				}
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

// TestSplitEveryOffset checks that every prefix of every valid frame is
// ErrIncomplete with n == 0, and that the whole frame then parses exactly,
// also when more bytes (the next frame) follow it.
func TestSplitEveryOffset(t *testing.T) {
	for _, tc := range validCases {
		b := []byte(tc.in)
		for k := 0; k < len(b); k++ {
			// A fresh, exactly sized copy so a read past the prefix would
			// panic instead of seeing the rest of the frame.
			pre := append([]byte(nil), b[:k]...)
			r, n, err := Parse(pre)
			if !errors.Is(err, ErrIncomplete) || n != 0 || r.Type != 0 {
				t.Fatalf("%s: prefix %d of %q: r=%v n=%d err=%v, want ErrIncomplete", tc.name, k, tc.in, r, n, err)
			}
			if _, err := (&Parser{}).Skip(pre); !errors.Is(err, ErrIncomplete) {
				t.Fatalf("%s: Skip prefix %d: %v", tc.name, k, err)
			}
		}
		if _, n, err := Parse(b); err != nil || n != len(b) {
			t.Fatalf("%s: whole: n=%d err=%v", tc.name, n, err)
		}
	}
}

// TestBackToBack parses pairs of frames from one buffer, one after the
// other, and a whole stream of every valid frame in a row.
func TestBackToBack(t *testing.T) {
	var stream []byte
	for _, a := range validCases {
		stream = append(stream, a.in...)
		for _, b := range []validCase{validCases[0], validCases[len(validCases)/2], a} {
			buf := []byte(a.in + b.in)
			r1, n1, err := Parse(buf)
			if err != nil || n1 != len(a.in) || string(r1.Attr)+string(r1.Raw) != a.in {
				t.Fatalf("%s+%s: first: n=%d err=%v", a.name, b.name, n1, err)
			}
			r2, n2, err := Parse(buf[n1:])
			if err != nil || n2 != len(b.in) || string(r2.Attr)+string(r2.Raw) != b.in {
				t.Fatalf("%s+%s: second: n=%d err=%v", a.name, b.name, n2, err)
			}
		}
	}
	off, count := 0, 0
	for off < len(stream) {
		_, n, err := Parse(stream[off:])
		if err != nil {
			t.Fatalf("stream frame %d at %d: %v", count, off, err)
		}
		if want := len(validCases[count].in); n != want {
			t.Fatalf("stream frame %d (%s): n=%d want %d", count, validCases[count].name, n, want)
		}
		off += n
		count++
	}
	if count != len(validCases) {
		t.Fatalf("stream: %d frames, want %d", count, len(validCases))
	}
	if _, _, err := Parse(stream[off:]); !errors.Is(err, ErrIncomplete) {
		t.Fatalf("empty rest: %v", err)
	}
}

// errorCase is malformed input: the error must be a *ProtocolError at
// offset off whose message contains msg.
type errorCase struct {
	name string
	p    Parser
	in   string
	off  int
	msg  string
}

var errorCases = []errorCase{
	{name: "bad type byte", in: "?\r\n", off: 0, msg: "unknown type byte '?'"},
	{name: "bad type byte space", in: " +OK\r\n", off: 0, msg: "unknown type byte ' '"},
	{name: "bad type byte nul", in: "\x00", off: 0, msg: `unknown type byte '\x00'`},
	{name: "inline command is not a reply", in: "PING\r\n", off: 0, msg: "unknown type byte 'P'"},
	{name: "bad type inside array", in: "*2\r\n:1\r\n?\r\n", off: 8, msg: "unknown type byte"},
	{name: "bulk -2", in: "$-2\r\n", off: 1, msg: `negative bulk string length "-2"`},
	{name: "bulk -2 nested", in: "*1\r\n$-2\r\n", off: 5, msg: "negative bulk string length"},
	{name: "array -5", in: "*-5\r\n", off: 1, msg: `negative array length "-5"`},
	{name: "map -1", in: "%-1\r\n", off: 1, msg: "negative map length"},
	{name: "set -1", in: "~-1\r\n", off: 1, msg: "negative set length"},
	{name: "push -1", in: ">-1\r\n", off: 1, msg: "negative push length"},
	{name: "attribute -1", in: "|-1\r\n", off: 1, msg: "negative attribute length"},
	{name: "bulk error -1", in: "!-1\r\n", off: 1, msg: "negative bulk error length"},
	{name: "verbatim -1", in: "=-1\r\n", off: 1, msg: "negative verbatim string length"},
	{name: "bulk length min int64", in: "$-9223372036854775808\r\n", off: 1, msg: "negative bulk string length"},
	{name: "huge bulk", in: "$536870913\r\n", off: 1, msg: "bulk string length 536870913 exceeds the limit of 536870912"},
	{name: "huge bulk max int64", in: "$9223372036854775807\r\n", off: 1, msg: "exceeds the limit"},
	{name: "bulk length overflows int64", in: "$9223372036854775808\r\n", off: 1, msg: "invalid bulk string length"},
	{name: "huge verbatim", in: "=536870913\r\n", off: 1, msg: "verbatim string length 536870913 exceeds"},
	{name: "huge bulk error", in: "!536870913\r\n", off: 1, msg: "bulk error length 536870913 exceeds"},
	{name: "huge array", in: "*16777217\r\n", off: 1, msg: "array length 16777217 exceeds the limit of 16777216"},
	{name: "huge map", in: "%16777217\r\n", off: 1, msg: "map length 16777217 exceeds"},
	{name: "huge set", in: "~99999999999\r\n", off: 1, msg: "set length 99999999999 exceeds"},
	{name: "huge push", in: ">16777217\r\n", off: 1, msg: "push length 16777217 exceeds"},
	{name: "huge attribute", in: "|16777217\r\n", off: 1, msg: "attribute length 16777217 exceeds"},
	{name: "huge nested", in: "*1\r\n*1\r\n$999999999999\r\n", off: 9, msg: "exceeds the limit"},
	{name: "too deep", in: strings.Repeat("*1\r\n", 65), off: 256, msg: "nested deeper than the limit of 64"},
	{name: "too deep mixed", in: strings.Repeat("%1\r\n+k\r\n", 64) + "~1\r\n", off: 64 * 8, msg: "nested deeper"},
	{name: "too deep attributes", in: strings.Repeat("|1\r\n+a\r\n", 64) + "|1\r\n", off: 64 * 8, msg: "nested deeper"},
	{name: "line without CR", in: "+OK\n", off: 3, msg: "line feed not preceded by carriage return"},
	{name: "bare LF", in: "\n", off: 0, msg: "unknown type byte"},
	{name: "header without CR", in: "$3\nabc\r\n", off: 2, msg: "line feed not preceded"},
	{name: "integer without CR", in: ":1\n", off: 2, msg: "line feed not preceded"},
	{name: "CR inside simple", in: "+a\rb\r\n", off: 1, msg: "carriage return inside a simple string"},
	{name: "CR inside error", in: "-a\rb\r\n", off: 1, msg: "carriage return inside a error"},
	{name: "over-long simple", p: Parser{MaxLineLen: 8}, in: "+123456789", off: 1, msg: "line longer than the limit of 8 bytes"},
	{name: "over-long error", p: Parser{MaxLineLen: 8}, in: "-ERR 56789\r\n", off: 1, msg: "line longer than the limit of 8"},
	{name: "over-long double", p: Parser{MaxLineLen: 4}, in: ",1.2345", off: 1, msg: "line longer than the limit of 4"},
	{name: "over-long big number", p: Parser{MaxLineLen: 4}, in: "(123456", off: 1, msg: "line longer than the limit of 4"},
	{name: "over-long integer", in: ":0000000000000000000000", off: 1, msg: "line longer than the limit of 21"},
	{name: "over-long bulk header", in: "$0000000000000000000000005", off: 1, msg: "line longer than the limit of 21"},
	{name: "over-long array header", in: "*1111111111111111111111111", off: 1, msg: "line longer"},
	{name: "bulk not followed by CRLF", in: "$3\r\nabcd\r\n", off: 7, msg: "bulk string payload not followed by CRLF"},
	{name: "bulk followed by LF only", in: "$3\r\nabc\n\r", off: 7, msg: "not followed by CRLF"},
	{name: "bulk error not followed by CRLF", in: "!3\r\nabcXY", off: 7, msg: "bulk error payload not followed by CRLF"},
	{name: "verbatim not followed by CRLF", in: "=5\r\ntxt:aXY", off: 9, msg: "not followed by CRLF"},
	{name: "verbatim too short", in: "=3\r\ntxt\r\n", off: 4, msg: "verbatim string without a 3-byte format"},
	{name: "verbatim no colon", in: "=5\r\ntxtab\r\n", off: 4, msg: "verbatim string without"},
	{name: "streamed bulk", in: "$?\r\n;4\r\nHell\r\n;0\r\n", off: 1, msg: "streamed bulk string is not supported"},
	{name: "streamed array", in: "*?\r\n:1\r\n.\r\n", off: 1, msg: "streamed array is not supported"},
	{name: "streamed map", in: "%?\r\n", off: 1, msg: "streamed map is not supported"},
	{name: "streamed set", in: "~?\r\n", off: 1, msg: "streamed set"},
	{name: "streamed part alone", in: ";4\r\nHell\r\n", off: 0, msg: "unknown type byte ';'"},
	{name: "stream end alone", in: ".\r\n", off: 0, msg: "unknown type byte '.'"},
	{name: "junk after bulk length", in: "$3x\r\nabc\r\n", off: 1, msg: `invalid bulk string length "3x"`},
	{name: "space after array length", in: "*2 \r\n", off: 1, msg: `invalid array length "2 "`},
	{name: "empty bulk length", in: "$\r\n", off: 1, msg: `invalid bulk string length ""`},
	{name: "empty array length", in: "*\r\n", off: 1, msg: "invalid array length"},
	{name: "sign only length", in: "*-\r\n", off: 1, msg: "invalid array length"},
	{name: "hex length", in: "$0x3\r\nabc\r\n", off: 1, msg: "invalid bulk string length"},
	{name: "junk after integer", in: ":12a\r\n", off: 1, msg: `invalid integer "12a"`},
	{name: "empty integer", in: ":\r\n", off: 1, msg: `invalid integer ""`},
	{name: "sign only integer", in: ":-\r\n", off: 1, msg: "invalid integer"},
	{name: "int64 max plus one", in: ":9223372036854775808\r\n", off: 1, msg: `invalid integer "9223372036854775808"`},
	{name: "int64 min minus one", in: ":-9223372036854775809\r\n", off: 1, msg: "invalid integer"},
	{name: "integer 20 digits", in: ":99999999999999999999\r\n", off: 1, msg: "invalid integer"},
	{name: "integer float", in: ":1.0\r\n", off: 1, msg: "invalid integer"},
	{name: "null with content", in: "_x\r\n", off: 1, msg: `null with content "x"`},
	{name: "boolean bad", in: "#x\r\n", off: 1, msg: `invalid boolean "x"`},
	{name: "boolean long", in: "#true\r\n", off: 1, msg: "invalid boolean"},
	{name: "boolean empty", in: "#\r\n", off: 1, msg: "invalid boolean"},
	{name: "double empty", in: ",\r\n", off: 1, msg: `invalid double ""`},
	{name: "double dot", in: ",.\r\n", off: 1, msg: "invalid double"},
	{name: "double exp only", in: ",e5\r\n", off: 1, msg: "invalid double"},
	{name: "double exp no digits", in: ",1e\r\n", off: 1, msg: `invalid double "1e"`},
	{name: "double exp sign no digits", in: ",1e+\r\n", off: 1, msg: "invalid double"},
	{name: "double inf junk", in: ",inf1\r\n", off: 1, msg: "invalid double"},
	{name: "double Infinity", in: ",Infinity\r\n", off: 1, msg: "invalid double"},
	{name: "double hex", in: ",0x10\r\n", off: 1, msg: "invalid double"},
	{name: "double underscore", in: ",1_0\r\n", off: 1, msg: "invalid double"},
	{name: "double space", in: ", 1\r\n", off: 1, msg: "invalid double"},
	{name: "double two dots", in: ",1.2.3\r\n", off: 1, msg: "invalid double"},
	{name: "big number empty", in: "(\r\n", off: 1, msg: `invalid big number ""`},
	{name: "big number sign only", in: "(-\r\n", off: 1, msg: "invalid big number"},
	{name: "big number fraction", in: "(1.5\r\n", off: 1, msg: "invalid big number"},
	{name: "error in map value", in: "%1\r\n+k\r\n#y\r\n", off: 9, msg: "invalid boolean"},
	{name: "error in attribute", in: "|1\r\n+k\r\n:x\r\n+OK\r\n", off: 9, msg: "invalid integer"},
	{name: "error after attribute", in: "|0\r\n?", off: 4, msg: "unknown type byte"},
	{name: "long message is cut", in: "," + strings.Repeat("1.", 20) + "\r\n", off: 1, msg: `invalid double "1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1."...`},

	// Custom limits, all enforced on the header alone (no payload follows).
	{name: "custom bulk limit", p: Parser{MaxBulkLen: 10}, in: "$11\r\n", off: 1, msg: "bulk string length 11 exceeds the limit of 10"},
	{name: "custom verbatim limit", p: Parser{MaxBulkLen: 10}, in: "=11\r\n", off: 1, msg: "exceeds the limit of 10"},
	{name: "custom aggregate limit", p: Parser{MaxAggregateLen: 3}, in: "*4\r\n", off: 1, msg: "array length 4 exceeds the limit of 3"},
	{name: "custom map limit counts pairs", p: Parser{MaxAggregateLen: 1}, in: "%2\r\n", off: 1, msg: "map length 2 exceeds the limit of 1"},
	{name: "custom depth", p: Parser{MaxDepth: 2}, in: "*1\r\n*1\r\n*1\r\n", off: 8, msg: "nested deeper than the limit of 2"},
	{name: "custom depth 1", p: Parser{MaxDepth: 1}, in: "*1\r\n~0\r\n", off: 4, msg: "nested deeper than the limit of 1"},
	{name: "custom line", p: Parser{MaxLineLen: 2}, in: "+abc", off: 1, msg: "line longer than the limit of 2"},
	{name: "max int64 bulk limit", p: Parser{MaxBulkLen: math.MaxInt64}, in: "$9223372036854775807\r\n", off: -1},
}

func TestParseErrors(t *testing.T) {
	for _, tc := range errorCases {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.p
			r, n, err := p.Parse([]byte(tc.in))
			if tc.off < 0 { // must not error: a huge but allowed length is incomplete
				if !errors.Is(err, ErrIncomplete) {
					t.Fatalf("err = %v, want ErrIncomplete", err)
				}
				return
			}
			if n != 0 || r.Type != 0 {
				t.Errorf("n = %d, r = %v on error", n, r)
			}
			var pe *ProtocolError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v (%T), want *ProtocolError", err, err)
			}
			if !errors.Is(err, ErrProtocol) || errors.Is(err, ErrIncomplete) {
				t.Errorf("errors.Is: ErrProtocol %v, ErrIncomplete %v", errors.Is(err, ErrProtocol), errors.Is(err, ErrIncomplete))
			}
			if pe.Offset != tc.off {
				t.Errorf("Offset = %d, want %d (%v)", pe.Offset, tc.off, err)
			}
			if !strings.Contains(pe.Msg, tc.msg) {
				t.Errorf("Msg = %q, want it to contain %q", pe.Msg, tc.msg)
			}
			if want := "resp: protocol error at byte "; !strings.HasPrefix(err.Error(), want) {
				t.Errorf("Error() = %q", err.Error())
			}
			if _, err2 := p.Skip([]byte(tc.in)); err2 == nil || err2.Error() != err.Error() {
				t.Errorf("Skip err = %v, want %v", err2, err)
			}
			// The error does not change when more bytes arrive.
			more := append([]byte(tc.in), "+OK\r\n:1\r\n$3\r\nabc\r\n"...)
			if _, _, err3 := p.Parse(more); err3 == nil || err3.Error() != err.Error() {
				t.Errorf("with more bytes: err = %v, want %v", err3, err)
			}
		})
	}
}

// TestDefaultLineLimit checks the default MaxLineLen on a real 1 MiB line:
// exactly at the limit it parses, one byte over it is an error even before
// the CRLF arrives.
func TestDefaultLineLimit(t *testing.T) {
	body := bytes.Repeat([]byte{'a'}, DefaultMaxLineLen)
	at := append(append([]byte{'+'}, body...), '\r', '\n')
	if _, n, err := Parse(at); err != nil || n != len(at) {
		t.Fatalf("line at the limit: n=%d err=%v", n, err)
	}
	if _, _, err := Parse(at[:len(at)-1]); !errors.Is(err, ErrIncomplete) {
		t.Fatalf("line at the limit, no LF: %v", err)
	}
	over := append(append([]byte{'+'}, body...), 'a')
	over = append(over, 'a') // limit+2 bytes of content, no CRLF yet
	if _, _, err := Parse(over); !errors.Is(err, ErrProtocol) {
		t.Fatalf("line over the limit: %v", err)
	}
}

// TestLimitsBoundaries checks each limit's exact boundary: at the limit is
// accepted, one past is rejected.
func TestLimitsBoundaries(t *testing.T) {
	p := Parser{MaxBulkLen: 3, MaxAggregateLen: 2, MaxDepth: 2, MaxLineLen: 3}
	ok := []string{"$3\r\nabc\r\n", "=3\r\n", "*2\r\n:1\r\n:2\r\n", "%2\r\n:1\r\n:2\r\n:3\r\n:4\r\n", "*1\r\n*1\r\n:1\r\n", "+abc\r\n", ",1.5\r\n"}
	for _, in := range ok {
		_, _, err := p.Parse([]byte(in))
		if err != nil && !(in == "=3\r\n" && errors.Is(err, ErrIncomplete)) {
			t.Errorf("%q at the limit: %v", in, err)
		}
	}
	bad := []string{"$4\r\n", "*3\r\n", "%3\r\n", "*1\r\n*1\r\n*", "+abcd", ",1.25"}
	for _, in := range bad {
		if _, _, err := p.Parse([]byte(in)); !errors.Is(err, ErrProtocol) {
			t.Errorf("%q over the limit: %v", in, err)
		}
	}
	// Zero and negative fields mean the defaults.
	for _, q := range []Parser{{}, {MaxBulkLen: -1, MaxAggregateLen: -1, MaxDepth: -1, MaxLineLen: -1}} {
		if _, _, err := q.Parse([]byte("$536870912\r\n")); !errors.Is(err, ErrIncomplete) {
			t.Errorf("%+v: default bulk limit: %v", q, err)
		}
		if _, _, err := q.Parse([]byte("$536870913\r\n")); !errors.Is(err, ErrProtocol) {
			t.Errorf("%+v: default bulk limit+1: %v", q, err)
		}
	}
	var nilParser *Parser
	if _, n, err := nilParser.Parse([]byte("+OK\r\n")); err != nil || n != 5 {
		t.Errorf("nil Parser: %d %v", n, err)
	}
}

func TestDepthAtLimit(t *testing.T) {
	in := []byte(strings.Repeat("*1\r\n", DefaultMaxDepth) + ":1\r\n")
	r, n, err := Parse(in)
	if err != nil || n != len(in) {
		t.Fatalf("depth %d: n=%d err=%v", DefaultMaxDepth, n, err)
	}
	// Walk down to the integer with Iter.
	for d := 0; d < DefaultMaxDepth; d++ {
		it := r.Iter()
		if !it.Next(&r) {
			t.Fatalf("Iter at depth %d", d)
		}
	}
	if v, ok := r.Int(); !ok || v != 1 {
		t.Fatalf("leaf = %v", r)
	}
}

func TestHelpers(t *testing.T) {
	parse := func(s string) Reply {
		t.Helper()
		r, _, err := Parse([]byte(s))
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		return r
	}
	for _, code := range []string{"NOSCRIPT", "WRONGTYPE", "LOADING", "READONLY", "NOAUTH", "WRONGPASS", "ERR", "BUSY", "MOVED"} {
		for _, r := range []Reply{parse("-" + code + " some text\r\n"), parse("!" + itoa(int64(len(code)+2)) + "\r\n" + code + " x\r\n")} {
			if string(r.ErrorPrefix()) != code || !r.HasErrorPrefix(code) || r.HasErrorPrefix(code+"X") {
				t.Errorf("%v: prefix %q", r, r.ErrorPrefix())
			}
			if string(r.ErrorText()) != string(r.Data) {
				t.Errorf("ErrorText %q", r.ErrorText())
			}
			if _, ok := r.Value().(Error); !ok {
				t.Errorf("Value %T", r.Value())
			}
		}
	}
	ok := parse("+OK\r\n")
	if ok.ErrorPrefix() != nil || ok.ErrorText() != nil || ok.HasErrorPrefix("OK") || ok.IsError() {
		t.Errorf("+OK treated as error")
	}
	if v, ok := parse(":1\r\n").Int(); !ok || v != 1 {
		t.Errorf("Int :1")
	}
	if _, ok := parse("+1\r\n").Int(); ok {
		t.Errorf("Int of simple string ok")
	}
	if _, ok := parse("$1\r\n1\r\n").Int(); ok {
		t.Errorf("Int of bulk ok")
	}
	if _, ok := parse(":1\r\n").Bool(); ok {
		t.Errorf("Bool of int ok")
	}
	if f, ok := parse(":-3\r\n").Float(); !ok || f != -3 {
		t.Errorf("Float of int")
	}
	if _, ok := parse("+1.5\r\n").Float(); ok {
		t.Errorf("Float of simple ok")
	}
	if parse("+x\r\n").VerbatimFormat() != nil || parse("+x\r\n").VerbatimText() != nil {
		t.Errorf("Verbatim of simple")
	}
	if !parse("_\r\n").IsNil() || !parse("*-1\r\n").IsNil() || !parse("$-1\r\n").IsNil() || parse("$0\r\n\r\n").IsNil() || parse("*0\r\n").IsNil() {
		t.Errorf("IsNil")
	}
	if it1, it2 := parse(":1\r\n").Iter(), parse("*-1\r\n").Iter(); it1.Remaining() != 0 || it2.Remaining() != 0 {
		t.Errorf("Iter of non-aggregate")
	}
	var it Iter
	var c Reply
	if it.Next(&c) {
		t.Errorf("zero Iter Next")
	}
	if _, ok := parse("*1\r\n:1\r\n").Elem(-1); ok {
		t.Errorf("Elem(-1)")
	}
	if got := parse("*2\r\n:1\r\n:2\r\n").String(); got != "(array of 2)" {
		t.Errorf("String = %q", got)
	}
	for ty, name := range map[byte]string{'+': "simple string", '-': "error", ':': "integer", '$': "bulk string", '*': "array",
		'_': "null", '#': "boolean", ',': "double", '(': "big number", '!': "bulk error", '=': "verbatim string",
		'%': "map", '~': "set", '|': "attribute", '>': "push", '?': "unknown"} {
		if TypeName(ty) != name {
			t.Errorf("TypeName(%q) = %q", ty, TypeName(ty))
		}
	}
	if Error("X y").Error() != "X y" {
		t.Errorf("Error.Error")
	}
}

// TestIterHandMadeReply checks that Iter over a Reply that did not come
// from Parse (so was never validated) stops instead of panicking.
func TestIterHandMadeReply(t *testing.T) {
	for _, r := range []Reply{
		{Type: TypeArray, N: 3, Raw: []byte("*3\r\n:1\r\n")},
		{Type: TypeArray, N: 2},
		{Type: TypeMap, N: 1, Raw: []byte("garbage")},
		{Type: TypeArray, N: 1, Raw: []byte("*1\r\n$9223372036854775807\r\nx")},
		{Type: TypeArray, N: 1, Raw: []byte("*1\r\n$9223372036854775806\r\n")},
	} {
		it := r.Iter()
		var c Reply
		k := 0
		for it.Next(&c) {
			k++
		}
		if k > r.Len() {
			t.Errorf("%q: %d children", r.Raw, k)
		}
		_ = r.Value()
	}
}
