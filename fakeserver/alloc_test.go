//go:build !race

package fakeserver

import (
	"testing"

	"github.com/redmux/redmux/redlock/scripts"
	"github.com/tidwall/redcon"
)

// discardConn is a redcon.Conn whose writes go nowhere.
type discardConn struct{ redcon.Conn }

func (discardConn) WriteError(string)              {}
func (discardConn) WriteString(string)             {}
func (discardConn) WriteBulk([]byte)               {}
func (discardConn) WriteBulkString(string)         {}
func (discardConn) WriteInt(int)                   {}
func (discardConn) WriteInt64(int64)               {}
func (discardConn) WriteArray(int)                 {}
func (discardConn) WriteNull()                     {}
func (discardConn) WriteRaw([]byte)                {}
func (discardConn) SetContext(interface{})         {}
func (discardConn) Context() interface{}           { return nil }
func (discardConn) RemoteAddr() string             { return "test" }
func (discardConn) Close() error                   { return nil }
func (discardConn) WriteUint64(uint64)             {}
func (discardConn) WriteAny(interface{})           {}
func (discardConn) PeekPipeline() []redcon.Command { return nil }

// TestHotPathAllocs: the lock path's lookups and the release script do not
// allocate in the server's own code (redcon's reader allocates per command;
// a SET of a new key allocates its key and value).
func TestHotPathAllocs(t *testing.T) {
	n := startNode(t, Config{})
	fc := newFconn(nil, n)
	fc.authed = true
	fc.out = &outConn{Conn: discardConn{}, fc: fc}
	args := func(a ...string) [][]byte {
		out := make([][]byte, len(a))
		for i, s := range a {
			out[i] = []byte(s)
		}
		return out
	}
	n.dispatch(fc, args("SCRIPT", "LOAD", scripts.Release.Text))
	n.dispatch(fc, args("SET", "held", "tok"))
	for _, tc := range []struct {
		name string
		args [][]byte
	}{
		{"PING", args("PING")},
		{"GET", args("GET", "held")},
		{"SET NX PX on a held key", args("SET", "held", "other", "NX", "PX", "10000")},
		{"EVALSHA release, wrong token", args("EVALSHA", scripts.Release.SHA, "1", "held", "nope")},
		{"EVALSHA release, missing key", args("EVALSHA", scripts.Release.SHA, "1", "nokey", "tok")},
		{"PTTL", args("PTTL", "held")},
	} {
		if a := testing.AllocsPerRun(1000, func() { n.dispatch(fc, tc.args) }); a != 0 {
			t.Errorf("%s: %.1f allocs per command", tc.name, a)
		}
	}
	// a whole lock cycle: SET NX PX of a new key, then release
	set := args("SET", "lk", "tok", "NX", "PX", "10000")
	rel := args("EVALSHA", scripts.Release.SHA, "1", "lk", "tok")
	if a := testing.AllocsPerRun(1000, func() { n.dispatch(fc, set); n.dispatch(fc, rel) }); a > 2 {
		t.Errorf("lock cycle: %.1f allocs, want <= 2 (the new key and its value)", a)
	}
	if _, ok := n.Get("lk"); ok {
		t.Error("lock cycle left the key behind")
	}
}
