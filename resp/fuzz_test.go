package resp

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
)

// fuzzParsers are the limits FuzzParse checks with: the defaults and small
// ones that a fuzzer can actually reach.
var fuzzParsers = []*Parser{
	{},
	{MaxBulkLen: 64, MaxAggregateLen: 8, MaxDepth: 4, MaxLineLen: 32},
}

// hostileSeeds are inputs built to hurt a parser: deep nesting, huge
// declared lengths, negative lengths, truncated frames.
var hostileSeeds = []string{
	strings.Repeat("*1\r\n", 10000),
	strings.Repeat("|1\r\n", 1000),
	strings.Repeat("%1\r\n*1\r\n", 100) + ":1\r\n",
	// Nested exactly at the default limit: valid alone, one level too
	// deep inside another array (CI's fuzzer found the check's mistake).
	strings.Repeat("*1\r\n", DefaultMaxDepth) + ":1\r\n",
	strings.Repeat("|1\r\n+a\r\n+b\r\n", DefaultMaxDepth) + ":1\r\n",
	strings.Repeat("%1\r\n+k\r\n", DefaultMaxDepth-1) + "~1\r\n_\r\n",
	"*16777216\r\n" + strings.Repeat(":1\r\n", 3),
	"*9223372036854775807\r\n",
	"$536870912\r\n",
	"$9223372036854775807\r\nabc",
	"%8388608\r\n+k\r\n",
	"$-2\r\n", "*-5\r\n", "*-9223372036854775808\r\n", "$-1", "*1\r\n$-1\r\n$-1\r\n",
	"*2\r\n$3\r\nSET\r\n$100\r\nab",
	"+" + strings.Repeat("x", 100),
	"=3\r\ntxt\r\n", "=4\r\n", "$?\r\n", "*?\r\n", ",", "(", "#", "_", "\r\n", "\n",
	"|0\r\n|0\r\n|0\r\n",
}

// checkParse states what must hold for any input b under parser p.
func checkParse(t *testing.T, p *Parser, b []byte) {
	r, n, err := p.Parse(b)
	// The fast path (in Parse, in the aggregate validator and in Iter)
	// agrees with the general path alone: same outcome, same error text,
	// same size, same fields, and the same children.
	g, gn, gerr := p.parseGeneral(b)
	if gn != n || !sameErr(gerr, err) {
		t.Fatalf("Parse = %d, %v; general path = %d, %v", n, err, gn, gerr)
	}
	if err == nil {
		sameReply(t, "Parse", r, g)
		walkGeneral(t, p, r, 0)
	}
	switch {
	case err == nil:
		if n <= 0 || n > len(b) {
			t.Fatalf("n = %d for %d bytes", n, len(b))
		}
		if sn, serr := p.Skip(b); sn != n || serr != nil {
			t.Fatalf("Skip = %d, %v; Parse = %d", sn, serr, n)
		}
		if len(r.Attr)+len(r.Raw) != n || !bytes.Equal(append(append([]byte(nil), r.Attr...), r.Raw...), b[:n]) {
			t.Fatalf("Attr+Raw is not the frame")
		}
		// The reply's Shape over a copy of the frame is the reply Parse
		// gives for the copy, its slices' capacities included.
		cp := append([]byte(nil), b[:n]...)
		pc, _, _ := p.Parse(cp)
		at := r.Shape().At(cp)
		sameReply(t, "Shape.At", at, pc)
		if cap(at.Data) != cap(pc.Data) || cap(at.Raw) != cap(pc.Raw) || cap(at.Attr) != cap(pc.Attr) || (at.Attr == nil) != (pc.Attr == nil) {
			t.Fatalf("Shape.At: capacities %d/%d/%d, Parse %d/%d/%d", cap(at.Data), cap(at.Raw), cap(at.Attr), cap(pc.Data), cap(pc.Raw), cap(pc.Attr))
		}
		// The frame alone, and the frame with anything after it, parse
		// to the same size.
		if _, n2, err := p.Parse(b[:n:n]); err != nil || n2 != n {
			t.Fatalf("frame alone: n=%d err=%v", n2, err)
		}
		// Incomplete input is never reported complete: every strict
		// prefix is ErrIncomplete.
		step := 1
		if n > 512 {
			step = n / 256
		}
		for k := 0; k < n; k += step {
			if _, nk, err := p.Parse(b[:k:k]); err != ErrIncomplete || nk != 0 {
				t.Fatalf("prefix %d of a %d-byte frame: n=%d err=%v", k, n, nk, err)
			}
		}
		if _, nk, err := p.Parse(b[: n-1 : n-1]); err != ErrIncomplete || nk != 0 {
			t.Fatalf("prefix n-1: n=%d err=%v", nk, err)
		}
		// The same frame inside an array reads back the same through Iter.
		// Wrapping adds one level: a frame nested exactly at the limit is
		// refused wrapped, for its depth alone, and reads with one more.
		if p.MaxDepth == 0 {
			wrapped := append([]byte("*1\r\n"), b[:n]...)
			w, wn, err := p.Parse(wrapped)
			if err != nil && strings.Contains(err.Error(), "nested deeper than the limit") {
				if _, _, derr := (&Parser{MaxDepth: DefaultMaxDepth - 1}).Parse(b[:n]); derr == nil {
					t.Fatalf("frame inside an array refused for depth, but the frame is below the limit: %v", err)
				}
				w, wn, err = (&Parser{MaxDepth: DefaultMaxDepth + 1}).Parse(wrapped)
			}
			if err != nil || wn != len(wrapped) {
				t.Fatalf("frame inside an array: n=%d err=%v", wn, err)
			}
			c, ok := w.Elem(0)
			if !ok {
				t.Fatalf("frame inside an array: no element 0")
			}
			sameReply(t, "Iter", c, r)
		}
		walk(t, r, 0)
		if a, ok := r.Attribute(); ok {
			walk(t, a, 0)
			_ = a.Value()
		} else if len(r.Attr) > 0 {
			t.Fatalf("Attr %q but no Attribute", r.Attr)
		}
		_ = r.String()
		_, _ = r.Float()
		_, _ = r.Int()
		_, _ = r.Bool()
		_ = r.ErrorPrefix()
		_ = r.IsOK()
		// What the encoders write back, the default parser reads as equal.
		v := r.Value()
		re := reencode(nil, r)
		r2, n2, err := Parse(re)
		if err != nil || n2 != len(re) {
			t.Fatalf("re-encoded %q: n=%d err=%v", re, n2, err)
		}
		if !valueEqual(r2.Value(), v) {
			t.Fatalf("re-encoded value differs: %#v vs %#v", r2.Value(), v)
		}
	case err == ErrIncomplete:
		if n != 0 || r.Type != 0 {
			t.Fatalf("incomplete with n=%d r=%v", n, r)
		}
		// Every prefix of an incomplete input is incomplete too.
		for _, k := range []int{0, len(b) / 2, len(b) - 1} {
			if k >= 0 && k < len(b) {
				if _, _, err := p.Parse(b[:k:k]); err != ErrIncomplete {
					t.Fatalf("prefix %d of incomplete input: %v", k, err)
				}
			}
		}
	default:
		var pe *ProtocolError
		if !errors.As(err, &pe) || !errors.Is(err, ErrProtocol) || errors.Is(err, ErrIncomplete) {
			t.Fatalf("error %v (%T) is not a *ProtocolError", err, err)
		}
		if n != 0 || r.Type != 0 {
			t.Fatalf("error with n=%d", n)
		}
		if pe.Offset < 0 || pe.Offset > len(b) || pe.Msg == "" {
			t.Fatalf("bad error %+v for %d bytes", pe, len(b))
		}
		// More bytes never turn an error into something else.
		more := append(append([]byte(nil), b...), "\r\n+OK\r\n"...)
		if _, _, err2 := p.Parse(more); err2 == nil || err2.Error() != err.Error() {
			t.Fatalf("with more bytes: %v, was %v", err2, err)
		}
	}
}

// sameErr reports whether two Parse errors are the same outcome with the
// same text (nil, ErrIncomplete, or a protocol error saying the same thing
// at the same offset).
func sameErr(a, b error) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Error() == b.Error() && errors.Is(a, ErrIncomplete) == errors.Is(b, ErrIncomplete)
}

// sameReply fails t unless got and want have the same fields, nil-ness of
// Data included.
func sameReply(t *testing.T, what string, got, want Reply) {
	t.Helper()
	if got.Type != want.Type || got.Null != want.Null || got.N != want.N ||
		!bytes.Equal(got.Data, want.Data) || (got.Data == nil) != (want.Data == nil) ||
		!bytes.Equal(got.Raw, want.Raw) || !bytes.Equal(got.Attr, want.Attr) {
		t.Fatalf("%s and the general path disagree:\n%+v\n%+v", what, got, want)
	}
}

// walkGeneral walks r's children twice, with Iter (which takes the fast
// path where it can) and with the general path alone on the bytes that
// follow the header, and checks each child is the same both ways.
func walkGeneral(t *testing.T, p *Parser, r Reply, depth int) {
	if depth > 1000 || !r.IsAggregate() || r.Len() == 0 {
		return
	}
	pos := bytes.IndexByte(r.Raw, '\n') + 1
	it := r.Iter()
	var c Reply
	for it.Next(&c) {
		g, gn, err := p.parseGeneral(r.Raw[pos:])
		if err != nil {
			t.Fatalf("child at %d: general path: %v", pos, err)
		}
		sameReply(t, "Iter", c, g)
		if gn != len(c.Attr)+len(c.Raw) {
			t.Fatalf("child at %d: general path used %d bytes, Iter %d", pos, gn, len(c.Attr)+len(c.Raw))
		}
		pos += gn
		walkGeneral(t, p, c, depth+1)
	}
	if pos != len(r.Raw) {
		t.Fatalf("children end at %d of %d", pos, len(r.Raw))
	}
}

// walk visits an aggregate's children with Iter, recursively, and checks
// it stops after exactly Len children.
func walk(t *testing.T, r Reply, depth int) {
	if depth > 1000 {
		t.Fatalf("walk deeper than 1000")
	}
	if !r.IsAggregate() {
		return
	}
	it := r.Iter()
	var c Reply
	k := 0
	for it.Next(&c) {
		k++
		if k > r.Len() {
			t.Fatalf("Iter visited more than Len = %d", r.Len())
		}
		walk(t, c, depth+1)
	}
	if k != r.Len() || it.Remaining() != 0 {
		t.Fatalf("Iter visited %d, Len = %d", k, r.Len())
	}
}

func FuzzParse(f *testing.F) {
	for _, tc := range validCases {
		f.Add([]byte(tc.in))
	}
	for _, tc := range errorCases {
		f.Add([]byte(tc.in))
	}
	for _, s := range hostileSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, p := range fuzzParsers {
			checkParse(t, p, b)
		}
	})
}

// FuzzRoundTrip encodes fuzzed arguments with every encoder, in one array
// and as commands, and checks the parser reads them back equal. Line breaks
// in a simple string's or error's text come back as spaces.
func FuzzRoundTrip(f *testing.F) {
	f.Add("lock:orders", []byte("0123456789abcdefghij"), int64(30000), 1.5)
	f.Add("", []byte{}, int64(math.MinInt64), math.Inf(-1))
	f.Add("k\r\n", []byte("\r\n$-1\r\n"), int64(-1), math.NaN())
	f.Fuzz(func(t *testing.T, key string, value []byte, n int64, fl float64) {
		line := strings.NewReplacer("\r", " ", "\n", " ").Replace(key)
		ms := itoa(n)
		var b []byte
		b = AppendArrayHeader(b, 14)
		b = AppendSimpleString(b, key)
		b = AppendError(b, "ERR "+key)
		b = AppendInt(b, n)
		b = AppendBulk(b, value)
		b = AppendBulkString(b, key)
		b = AppendBulkInt(b, n)
		b = AppendBulkError(b, key)
		b = AppendVerbatim(b, "txt", value)
		b = AppendDouble(b, fl)
		b = AppendBigNumber(b, ms)
		b = AppendCommand(b, "SET", key, string(value), "NX", "PX", ms)
		b = AppendCommandBytes(b, []byte(key), value)
		b = AppendBulkInt(AppendBulk(AppendArrayHeader(b, 2), value), n)
		b = AppendCommandBytes(AppendMapHeader(b, 1), []byte(key), value)
		b = AppendSetHeader(b, 0)
		want := []any{line, Error("ERR " + line), n, string(value), key, ms, Error(key), string(value), fl, ms,
			[]any{"SET", key, string(value), "NX", "PX", ms},
			[]any{key, string(value)},
			[]any{string(value), ms},
			[]KV{{[]any{key, string(value)}, []any{}}},
		}
		r, m, err := Parse(b)
		if err != nil || m != len(b) {
			t.Fatalf("Parse: n=%d of %d, err=%v", m, len(b), err)
		}
		if got := r.Value(); !valueEqual(got, want) {
			t.Fatalf("Value = %#v\nwant %#v", got, want)
		}
	})
}
