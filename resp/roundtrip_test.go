package resp

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestEncodeRoundTrip checks every Append* function: its exact bytes, and
// that the parser reads back what was written.
func TestEncodeRoundTrip(t *testing.T) {
	value := []byte("\x00\x01random\r\nlock-value\xff")
	cases := []struct {
		name  string
		enc   []byte
		wire  string // exact encoding, "" to skip
		value any
		check func(t *testing.T, r Reply)
	}{
		{"array header", AppendArrayHeader(nil, 0), "*0\r\n", []any{}, nil},
		{"null array", AppendArrayHeader(nil, -1), "*-1\r\n", nil, nil},
		{"null array func", AppendNullArray(nil), "*-1\r\n", nil, nil},
		{"map", AppendInt(AppendSimpleString(AppendMapHeader(nil, 1), "k"), 1), "%1\r\n+k\r\n:1\r\n", []KV{{"k", int64(1)}}, nil},
		{"set", AppendBool(AppendSetHeader(nil, 1), true), "~1\r\n#t\r\n", []any{true}, nil},
		{"push", AppendBulkString(AppendPushHeader(nil, 1), "message"), ">1\r\n$7\r\nmessage\r\n", []any{"message"}, nil},
		{"attribute", AppendNull(AppendInt(AppendSimpleString(AppendAttributeHeader(nil, 1), "ttl"), 3)), "|1\r\n+ttl\r\n:3\r\n_\r\n", nil,
			func(t *testing.T, r Reply) {
				mustEq(t, string(r.Attr), "|1\r\n+ttl\r\n:3\r\n")
				mustEq(t, r.Type, TypeNull)
			}},
		{"bulk", AppendBulk(nil, value), "$21\r\n" + string(value) + "\r\n", string(value), nil},
		{"bulk empty", AppendBulk(nil, nil), "$0\r\n\r\n", "", nil},
		{"bulk string", AppendBulkString(nil, "héllo"), "$6\r\nhéllo\r\n", "héllo", nil},
		{"bulk int", AppendBulkInt(nil, -12), "$3\r\n-12\r\n", "-12", nil},
		{"bulk int min", AppendBulkInt(nil, math.MinInt64), "$20\r\n-9223372036854775808\r\n", "-9223372036854775808", nil},
		{"null bulk", AppendNullBulk(nil), "$-1\r\n", nil, nil},
		{"null", AppendNull(nil), "_\r\n", nil, nil},
		{"int", AppendInt(nil, 42), ":42\r\n", int64(42), nil},
		{"int max", AppendInt(nil, math.MaxInt64), ":9223372036854775807\r\n", int64(math.MaxInt64), nil},
		{"int min", AppendInt(nil, math.MinInt64), ":-9223372036854775808\r\n", int64(math.MinInt64), nil},
		{"simple", AppendSimpleString(nil, "OK"), "+OK\r\n", "OK", func(t *testing.T, r Reply) { mustTrue(t, r.IsOK(), "IsOK") }},
		{"error", AppendError(nil, "NOSCRIPT x"), "-NOSCRIPT x\r\n", Error("NOSCRIPT x"), nil},
		{"bulk error", AppendBulkError(nil, "ERR a\r\nb"), "!8\r\nERR a\r\nb\r\n", Error("ERR a\r\nb"), nil},
		{"true", AppendBool(nil, true), "#t\r\n", true, nil},
		{"false", AppendBool(nil, false), "#f\r\n", false, nil},
		{"double", AppendDouble(nil, 1.5), ",1.5\r\n", 1.5, nil},
		{"double exp", AppendDouble(nil, 1e300), ",1e+300\r\n", 1e300, nil},
		{"double small", AppendDouble(nil, -2.5e-10), ",-2.5e-10\r\n", -2.5e-10, nil},
		{"double inf", AppendDouble(nil, math.Inf(1)), ",inf\r\n", math.Inf(1), nil},
		{"double -inf", AppendDouble(nil, math.Inf(-1)), ",-inf\r\n", math.Inf(-1), nil},
		{"double nan", AppendDouble(nil, math.NaN()), ",nan\r\n", math.NaN(), nil},
		{"double max", AppendDouble(nil, math.MaxFloat64), "", math.MaxFloat64, nil},
		{"double smallest", AppendDouble(nil, math.SmallestNonzeroFloat64), "", math.SmallestNonzeroFloat64, nil},
		{"big number", AppendBigNumber(nil, "-123456789012345678901234567890"), "(-123456789012345678901234567890\r\n", "-123456789012345678901234567890", nil},
		{"verbatim", AppendVerbatim(nil, "txt", []byte("a\r\nb")), "=8\r\ntxt:a\r\nb\r\n", "a\r\nb",
			func(t *testing.T, r Reply) { mustEq(t, string(r.VerbatimFormat()), "txt") }},
		{"command", AppendCommand(nil, "GET", "k"), "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", []any{"GET", "k"}, nil},
		{"command empty", AppendCommand(nil), "*0\r\n", []any{}, nil},
		{"command bytes", AppendCommandBytes(nil, []byte("DEL"), value), "", []any{"DEL", string(value)}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.wire != "" && string(tc.enc) != tc.wire {
				t.Errorf("wire = %q, want %q", tc.enc, tc.wire)
			}
			r, n, err := Parse(tc.enc)
			if err != nil || n != len(tc.enc) {
				t.Fatalf("Parse(%q): n=%d err=%v", tc.enc, n, err)
			}
			if v := r.Value(); !valueEqual(v, tc.value) {
				t.Errorf("Value = %#v, want %#v", v, tc.value)
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

// TestLineFramesReplaceLineBreaks checks AppendSimpleString and AppendError
// write each CR or LF of their text as a space, so the frame stays one valid
// line that parses back whole.
func TestLineFramesReplaceLineBreaks(t *testing.T) {
	cases := []struct{ in, out string }{
		{"", ""},
		{"OK", "OK"},
		{"a\r\nb", "a  b"},
		{"\r", " "},
		{"\n\n", "  "},
		{"x\r\n+OK\r\n", "x  +OK  "},
		{"ends\r", "ends "},
	}
	for _, tc := range cases {
		for _, enc := range []struct {
			name string
			f    func([]byte, string) []byte
			t    byte
		}{{"simple", AppendSimpleString, TypeSimpleString}, {"error", AppendError, TypeError}} {
			t.Run(enc.name+"/"+strconv.Quote(tc.in), func(t *testing.T) {
				b := enc.f([]byte("prefix"), tc.in)
				want := "prefix" + string(enc.t) + tc.out + "\r\n"
				if string(b) != want {
					t.Fatalf("got %q, want %q", b, want)
				}
				r, n, err := Parse(b[len("prefix"):])
				if err != nil || n != len(b)-len("prefix") || r.Type != enc.t || string(r.Data) != tc.out {
					t.Fatalf("Parse: %v n=%d err=%v", r, n, err)
				}
			})
		}
	}
}

// gen builds random nested RESP values with the Append* encoders and
// returns the encoding and the Value the parser must give back.
type gen struct {
	rng *rand.Rand
}

func (g *gen) bytes(max int, allowCRLF bool) []byte {
	n := g.rng.IntN(max + 1)
	b := make([]byte, n)
	for i := range b {
		c := byte(g.rng.IntN(256))
		if !allowCRLF && (c == '\r' || c == '\n') {
			c = 'x'
		}
		b[i] = c
	}
	return b
}

func (g *gen) int64() int64 {
	switch g.rng.IntN(6) {
	case 0:
		return math.MaxInt64
	case 1:
		return math.MinInt64
	case 2:
		return int64(g.rng.IntN(10))
	}
	return int64(g.rng.Uint64())
}

func (g *gen) float() float64 {
	switch g.rng.IntN(8) {
	case 0:
		return math.Inf(1)
	case 1:
		return math.Inf(-1)
	case 2:
		return math.NaN()
	case 3:
		return float64(g.rng.IntN(1000) - 500)
	case 4:
		return math.Float64frombits(g.rng.Uint64()) // any bit pattern
	}
	return g.rng.NormFloat64() * math.Pow(10, float64(g.rng.IntN(40)-20))
}

func (g *gen) value(dst []byte, depth int) ([]byte, any) {
	if g.rng.IntN(8) == 0 { // attribute ahead of the value, ignored by Value
		dst = AppendAttributeHeader(dst, 1)
		dst = AppendSimpleString(dst, "meta")
		dst, _ = g.value(dst, depth+1)
	}
	kinds := 16
	if depth >= 4 {
		kinds = 11 // scalars only
	}
	switch g.rng.IntN(kinds) {
	case 0:
		s := string(g.bytes(20, false))
		return AppendSimpleString(dst, s), s
	case 1:
		s := "ERR " + string(g.bytes(20, false))
		return AppendError(dst, s), Error(s)
	case 2:
		v := g.int64()
		return AppendInt(dst, v), v
	case 3:
		b := g.bytes(40, true)
		return AppendBulk(dst, b), string(b)
	case 4:
		switch g.rng.IntN(3) {
		case 0:
			return AppendNullBulk(dst), nil
		case 1:
			return AppendNullArray(dst), nil
		}
		return AppendNull(dst), nil
	case 5:
		v := g.rng.IntN(2) == 0
		return AppendBool(dst, v), v
	case 6:
		f := g.float()
		return AppendDouble(dst, f), f
	case 7:
		s := strconv.FormatUint(g.rng.Uint64(), 10) + strconv.FormatUint(g.rng.Uint64(), 10)
		if g.rng.IntN(2) == 0 {
			s = "-" + s
		}
		return AppendBigNumber(dst, s), s
	case 8:
		b := g.bytes(30, true)
		return AppendVerbatim(dst, "txt", b), string(b)
	case 9:
		s := "SYNTAX " + string(g.bytes(20, true))
		return AppendBulkError(dst, s), Error(s)
	case 10:
		v := g.int64()
		return AppendBulkInt(dst, v), strconv.FormatInt(v, 10)
	case 11, 12:
		n := g.rng.IntN(5)
		out := make([]KV, n)
		dst = AppendMapHeader(dst, n)
		for i := range out {
			dst, out[i].Key = g.value(dst, depth+1)
			dst, out[i].Value = g.value(dst, depth+1)
		}
		return dst, out
	}
	n := g.rng.IntN(6)
	out := make([]any, n)
	switch g.rng.IntN(3) {
	case 0:
		dst = AppendArrayHeader(dst, n)
	case 1:
		dst = AppendSetHeader(dst, n)
	default:
		dst = AppendPushHeader(dst, n)
	}
	for i := range out {
		dst, out[i] = g.value(dst, depth+1)
	}
	return dst, out
}

// reencode writes a parsed reply back with the Append* encoders.
func reencode(dst []byte, r Reply) []byte {
	dst = append(dst, r.Attr...)
	if r.Null {
		switch r.Type {
		case TypeBulkString:
			return AppendNullBulk(dst)
		case TypeArray:
			return AppendNullArray(dst)
		}
		return AppendNull(dst)
	}
	switch r.Type {
	case TypeSimpleString:
		return AppendSimpleString(dst, string(r.Data))
	case TypeError:
		return AppendError(dst, string(r.Data))
	case TypeInteger:
		return AppendInt(dst, r.N)
	case TypeBulkString:
		return AppendBulk(dst, r.Data)
	case TypeBulkError:
		return AppendBulkError(dst, string(r.Data))
	case TypeVerbatim:
		return AppendVerbatim(dst, string(r.VerbatimFormat()), r.VerbatimText())
	case TypeBoolean:
		v, _ := r.Bool()
		return AppendBool(dst, v)
	case TypeDouble:
		f, _ := r.Float()
		return AppendDouble(dst, f)
	case TypeBigNumber:
		return AppendBigNumber(dst, string(r.Data))
	}
	dst = appendHeader(dst, r.Type, r.N)
	it := r.Iter()
	var c Reply
	for it.Next(&c) {
		dst = reencode(dst, c)
	}
	return dst
}

// TestGeneratedRoundTrip encodes random nested values, parses them back
// (one by one and as one pipelined stream), compares Value, and re-encodes
// the parsed replies to the same bytes.
func TestGeneratedRoundTrip(t *testing.T) {
	g := gen{rng: rand.New(rand.NewPCG(1, 2))}
	var stream []byte
	var want []any
	var sizes []int
	for i := 0; i < 3000; i++ {
		enc, v := g.value(nil, 0)
		r, n, err := Parse(enc)
		if err != nil || n != len(enc) {
			t.Fatalf("case %d: Parse(%q): n=%d err=%v", i, enc, n, err)
		}
		if got := r.Value(); !valueEqual(got, v) {
			t.Fatalf("case %d: %q: Value = %#v, want %#v", i, enc, got, v)
		}
		if re := reencode(nil, r); !bytes.Equal(re, enc) {
			t.Fatalf("case %d: re-encoded %q, want %q", i, re, enc)
		}
		if i%50 == 0 { // every prefix is incomplete
			for k := 0; k < len(enc); k++ {
				if _, _, err := Parse(enc[:k:k]); err != ErrIncomplete {
					t.Fatalf("case %d: prefix %d of %q: %v", i, k, enc, err)
				}
			}
		}
		stream = append(stream, enc...)
		want = append(want, v)
		sizes = append(sizes, n)
	}
	for i, off := 0, 0; i < len(want); i++ {
		r, n, err := Parse(stream[off:])
		if err != nil || n != sizes[i] {
			t.Fatalf("stream %d: n=%d want %d err=%v", i, n, sizes[i], err)
		}
		if !valueEqual(r.Value(), want[i]) {
			t.Fatalf("stream %d: Value differs", i)
		}
		off += n
	}
}
