package mux

import (
	"testing"

	"github.com/redmux/redmux/resp"
)

// oneFrame accepts exactly one request as Redis reads it: an array of one
// or more bulk strings, nothing before or after it.
func TestOneFrame(t *testing.T) {
	for _, tc := range []struct {
		cmd string
		ok  bool
	}{
		{"*1\r\n$4\r\nPING\r\n", true},
		{"*2\r\n$4\r\nECHO\r\n$0\r\n\r\n", true},
		{"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$4\r\na\r\nb\r\n", true}, // CRLF inside a bulk
		{"", false},
		{"*0\r\n", false},
		{"*-1\r\n", false},
		{"*1\r\n", false},
		{"*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPING\r\n", false},
		{"*1\r\n$4\r\nPING\r\nX", false},
		{"*1\r\n$4\r\nPIN\r\n", false},
		{"*1\r\n$4\r\nPINGXX", false},
		{"*1\r\n$-1\r\n", false},
		{"*1\r\n:1\r\n", false},
		{"*1\r\n+PING\r\n", false},
		{"*1\r\n*1\r\n$1\r\nx\r\n", false},
		{"*2\r\n$4\r\nPING\r\n", false},
		{"*1\r\n$99999999999\r\nx\r\n", false},
		{"*+1\r\n$4\r\nPING\r\n", false},
		{"*1\n$4\r\nPING\r\n", false},
		{"*1\r\n$\r\n\r\n", false},
		{"PING\r\n", false},
	} {
		if got := oneFrame([]byte(tc.cmd)); got != tc.ok {
			t.Errorf("oneFrame(%q) = %v, want %v", tc.cmd, got, tc.ok)
		}
	}
}

func FuzzOneFrame(f *testing.F) {
	f.Add([]byte("*1\r\n$4\r\nPING\r\n"))
	f.Add([]byte("*2\r\n$1\r\na\r\n$0\r\n\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		// Whatever oneFrame accepts, the parser reads as one array of
		// bulk strings spanning all of b.
		if !oneFrame(b) {
			return
		}
		rep, n, err := resp.Parse(b)
		if err != nil || n != len(b) || rep.Type != resp.TypeArray || rep.N < 1 {
			t.Fatalf("accepted %q, the parser says %d of %d bytes, %v", b, n, len(b), err)
		}
		it := rep.Iter()
		var a resp.Reply
		for it.Next(&a) {
			if a.Type != resp.TypeBulkString || a.Null {
				t.Fatalf("accepted %q with a %q element", b, a.Type)
			}
		}
	})
}
