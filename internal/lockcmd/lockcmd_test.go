package lockcmd

import (
	"bytes"
	"math"
	"strconv"
	"testing"

	"github.com/redmux/redmux/resp"
)

const sha = "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"

// generic is what resp.AppendCommand writes for each builder.
func generic(key string, value []byte, n int64) [][2][]byte {
	ms := strconv.FormatInt(n, 10)
	v := string(value)
	return [][2][]byte{
		{AppendSetNXPX(nil, key, value, n), resp.AppendCommand(nil, "SET", key, v, "NX", "PX", ms)},
		{AppendEvalSHA(nil, sha, key, value), resp.AppendCommand(nil, "EVALSHA", sha, "1", key, v)},
		{AppendEvalSHAInt(nil, sha, key, value, n), resp.AppendCommand(nil, "EVALSHA", sha, "1", key, v, ms)},
		{AppendEval(nil, "return 1", key, value), resp.AppendCommand(nil, "EVAL", "return 1", "1", key, v)},
		{AppendEvalInt(nil, "return 1", key, value, n), resp.AppendCommand(nil, "EVAL", "return 1", "1", key, v, ms)},
		{AppendEvalSHAKeys(nil, sha, []string{key}, value), resp.AppendCommand(nil, "EVALSHA", sha, "1", key, v)},
		{AppendEvalSHAKeysInt(nil, sha, []string{key}, value, n), resp.AppendCommand(nil, "EVALSHA", sha, "1", key, v, ms)},
		{AppendEvalSHAKeys(nil, sha, []string{key, "b", ""}, value), resp.AppendCommand(nil, "EVALSHA", sha, "3", key, "b", "", v)},
		{AppendEvalSHAKeysInt(nil, sha, []string{key, "b", "c", "d"}, value, n), resp.AppendCommand(nil, "EVALSHA", sha, "4", key, "b", "c", "d", v, ms)},
		{AppendEvalSHAFence(nil, sha, key, nil, value, n, "ab12"), resp.AppendCommand(nil, "EVALSHA", sha, "2", key, key+":fence", v, ms, "ab12")},
		{AppendEvalSHAFence(nil, sha, key, []string{key, "b"}, value, n, ""), resp.AppendCommand(nil, "EVALSHA", sha, "4", key, "b", key+":fence", "b:fence", v, ms, "")},
		{AppendEvalSHAFenceGuess(nil, sha, key, nil, value, n, 7, "ab12"), resp.AppendCommand(nil, "EVALSHA", sha, "2", key, key+":fence", v, ms, "7", "ab12")},
		{AppendZRevRangeTop(nil, key), resp.AppendCommand(nil, "ZREVRANGE", key+":fence", "0", "1", "WITHSCORES")},
		{AppendZAddGT(nil, key, false, n, "ab12"), resp.AppendCommand(nil, "ZADD", key+":fence", "GT", "CH", ms, "ab12")},
		{AppendZAddGT(nil, key, true, n, ""), resp.AppendCommand(nil, "ZADD", key+":fence", "XX", "GT", "CH", ms, "")},
		{AppendEvalSHACounters(nil, sha, key, nil), resp.AppendCommand(nil, "EVALSHA", sha, "1", key+":fence")},
		{AppendEvalSHACounters(nil, sha, key, []string{key, "b"}), resp.AppendCommand(nil, "EVALSHA", sha, "2", key+":fence", "b:fence")},
		{AppendEvalSHAFenceGuess(nil, sha, key, []string{"a", key, ""}, value, 1, n, ""), resp.AppendCommand(nil, "EVALSHA", sha, "6", "a", key, "", "a:fence", key+":fence", ":fence", v, "1", ms, "")},
	}
}

// TestMatchGeneric checks each builder writes exactly what AppendCommand
// writes for the same arguments.
func TestMatchGeneric(t *testing.T) {
	value := []byte("0123456789abcdefghij")
	for _, ttl := range []int64{0, 1, 9, 10, 30000, math.MaxInt64, math.MinInt64, -5} {
		for i, p := range generic("lock:{a}", value, ttl) {
			if !bytes.Equal(p[0], p[1]) {
				t.Errorf("ttl %d, builder %d: %q != %q", ttl, i, p[0], p[1])
			}
		}
	}
}

// TestAppends checks the builders append after what dst holds, and that two
// commands in one buffer parse back one after the other, field by field.
func TestAppends(t *testing.T) {
	value := []byte("0123456789abcdefghij")
	buf := append([]byte(nil), "+prefix"...)
	buf = AppendSetNXPX(buf, "a", value, 100)
	buf = AppendEvalSHA(buf, sha, "a", value)
	if string(buf[:7]) != "+prefix" {
		t.Fatalf("prefix overwritten: %q", buf)
	}
	rest := buf[len("+prefix"):]
	r, n, err := resp.Parse(rest)
	if err != nil || r.Type != resp.TypeArray || r.N != 6 {
		t.Fatalf("SET: %v, %v", r, err)
	}
	want := []string{"SET", "a", string(value), "NX", "PX", "100"}
	it := r.Iter()
	var c resp.Reply
	for i := 0; it.Next(&c); i++ {
		if c.Type != resp.TypeBulkString || string(c.Data) != want[i] || c.N != int64(len(want[i])) {
			t.Errorf("SET arg %d = %v", i, c)
		}
	}
	r, n2, err := resp.Parse(rest[n:])
	if err != nil || n+n2 != len(rest) || r.N != 5 {
		t.Fatalf("EVALSHA: %v n=%d err=%v", r, n2, err)
	}
}

// FuzzMatchGeneric checks every builder against AppendCommand for any key,
// value and number, CR/LF and empty strings included.
func FuzzMatchGeneric(f *testing.F) {
	f.Add("lock:orders", []byte("0123456789abcdefghij"), int64(30000))
	f.Add("", []byte{}, int64(math.MinInt64))
	f.Add("k\r\n", []byte("\r\n$-1\r\n"), int64(-1))
	f.Fuzz(func(t *testing.T, key string, value []byte, n int64) {
		for i, p := range generic(key, value, n) {
			if !bytes.Equal(p[0], p[1]) {
				t.Fatalf("builder %d: %q != %q", i, p[0], p[1])
			}
			if _, m, err := resp.Parse(p[0]); err != nil || m != len(p[0]) {
				t.Fatalf("builder %d: Parse n=%d of %d, err=%v", i, m, len(p[0]), err)
			}
		}
	})
}

var benchValue = []byte("0123456789abcdefghij")

func BenchmarkAppend(b *testing.B) {
	buf := make([]byte, 0, 512)
	key := "lock:orders:12345"
	b.Run("SetNXPX", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			buf = AppendSetNXPX(buf[:0], key, benchValue, 30000)
		}
		b.SetBytes(int64(len(buf)))
	})
	b.Run("EvalSHA", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			buf = AppendEvalSHA(buf[:0], sha, key, benchValue)
		}
		b.SetBytes(int64(len(buf)))
	})
	b.Run("EvalSHAInt", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			buf = AppendEvalSHAInt(buf[:0], sha, key, benchValue, 30000)
		}
		b.SetBytes(int64(len(buf)))
	})
	b.Run("AppendCommand", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			buf = resp.AppendCommand(buf[:0], "SET", key, "0123456789abcdefghij", "NX", "PX", "30000")
		}
		b.SetBytes(int64(len(buf)))
	})
}
