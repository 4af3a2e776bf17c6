//go:build !race

package lockcmd

import "testing"

// The race detector's instrumentation allocates, so this runs without it.

// TestZeroAlloc proves the lock path's builders allocate nothing when the
// buffer has room.
func TestZeroAlloc(t *testing.T) {
	var value [20]byte
	copy(value[:], "0123456789abcdefghij")
	key := "lock:orders"
	keys := []string{key, "lock:items", "lock:stock"}
	buf := make([]byte, 0, 8192)
	allocs := testing.AllocsPerRun(200, func() {
		buf = buf[:0]
		for i := 0; i < 5; i++ {
			buf = AppendSetNXPX(buf, key, value[:], 30000)
			buf = AppendEvalSHA(buf, sha, key, value[:])
			buf = AppendEvalSHAInt(buf, sha, key, value[:], 15000)
			buf = AppendEval(buf, "return 1", key, value[:])
			buf = AppendEvalInt(buf, "return 1", key, value[:], -1)
			buf = AppendEvalSHAKeys(buf, sha, keys, value[:])
			buf = AppendEvalSHAKeysInt(buf, sha, keys, value[:], 15000)
			buf = AppendEvalSHAFence(buf, sha, key, nil, value[:], 15000, "0123456789abcdef0123456789abcdef01234567")
			buf = AppendEvalSHAFenceGuess(buf, sha, key, keys, value[:], 15000, 1<<52, "0123456789abcdef0123456789abcdef01234567")
		}
	})
	if allocs != 0 {
		t.Fatalf("building lock commands: %v allocs per run, want 0", allocs)
	}
	if cap(buf) != 8192 {
		t.Fatalf("buffer grew to %d", cap(buf))
	}
}
