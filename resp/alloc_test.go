//go:build !race

package resp

import "testing"

// The race detector's instrumentation allocates, so these run without it.

// TestParseLockRepliesZeroAlloc proves parsing the lock path's replies and
// asking the helpers about them allocates nothing.
func TestParseLockRepliesZeroAlloc(t *testing.T) {
	frames := [][]byte{
		[]byte("+OK\r\n"),
		[]byte("$-1\r\n"),
		[]byte(":1\r\n"),
		[]byte(":0\r\n"),
		[]byte("-NOSCRIPT No matching script. Please use EVAL.\r\n"),
		[]byte("-LOADING Redis is loading the dataset in memory\r\n"),
		[]byte("!10\r\nREADONLY x\r\n"),
		[]byte("_\r\n"),
		[]byte(",1.5\r\n"),
		[]byte("*4\r\n+OK\r\n:1\r\n$-1\r\n%1\r\n+k\r\n$1\r\nv\r\n"),
		[]byte("|1\r\n+ttl\r\n:3\r\n+OK\r\n"),
	}
	p := &Parser{MaxBulkLen: 1 << 20}
	var sink int64
	allocs := testing.AllocsPerRun(200, func() {
		for _, f := range frames {
			r, n, err := p.Parse(f)
			if err != nil || n != len(f) {
				panic(err)
			}
			if r.IsOK() {
				sink++
			}
			if r.IsNil() {
				sink++
			}
			if v, ok := r.Int(); ok {
				sink += v
			}
			if r.HasErrorPrefix("NOSCRIPT") || r.HasErrorPrefix("LOADING") || r.HasErrorPrefix("READONLY") {
				sink++
			}
			sink += int64(len(r.ErrorPrefix()) + len(r.ErrorText()))
			if f, ok := r.Float(); ok && f > 0 {
				sink++
			}
			if r.Equal(okBytes) {
				sink++
			}
			it := r.Iter()
			var c Reply
			for it.Next(&c) {
				if c.IsOK() || c.IsNil() {
					sink++
				}
			}
			if c, ok := r.Elem(1); ok {
				sink += c.N
			}
			if _, err := p.Skip(f); err != nil {
				panic(err)
			}
			if r.Shape().At(f).IsOK() {
				sink++
			}
		}
		if _, _, err := Parse(frames[0][:3]); err != ErrIncomplete {
			panic(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("parsing lock replies: %v allocs per run, want 0", allocs)
	}
	if sink == 0 {
		t.Fatal("helpers saw nothing")
	}
}

// TestEncodeZeroAlloc proves the encoders allocate nothing when the buffer
// has room.
func TestEncodeZeroAlloc(t *testing.T) {
	var value [20]byte
	copy(value[:], "0123456789abcdefghij")
	const sha = "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"
	key := "lock:orders"
	buf := make([]byte, 0, 4096)
	allocs := testing.AllocsPerRun(200, func() {
		buf = buf[:0]
		for i := 0; i < 5; i++ {
			buf = AppendArrayHeader(buf, 6)
			buf = AppendBulkString(buf, key)
			buf = AppendBulk(buf, value[:])
			buf = AppendBulkInt(buf, 30000)
			buf = AppendSimpleString(buf, "OK with\r\nbreaks")
			buf = AppendError(buf, "NOSCRIPT "+sha)
			buf = AppendCommand(buf, "PING")
			buf = AppendCommandBytes(buf, value[:], value[:])
			buf = AppendBulkInt(buf, -9223372036854775808)
			buf = AppendDouble(buf, 1.5)
		}
	})
	if allocs != 0 {
		t.Fatalf("encoding: %v allocs per run, want 0", allocs)
	}
	if cap(buf) != 4096 {
		t.Fatalf("buffer grew to %d", cap(buf))
	}
}
