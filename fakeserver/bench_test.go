package fakeserver

import (
	"bufio"
	"net"
	"strconv"
	"testing"

	"github.com/redmux/redmux/redlock/scripts"
)

// BenchmarkLockPath measures the server side of one lock cycle: SET NX PX
// then EVALSHA release, pipelined on one connection. Allocations reported
// are the whole process's (client side included).
func BenchmarkLockPath(b *testing.B) {
	b.Run("native", func(b *testing.B) { benchLockPath(b, Config{}) })
	b.Run("lua", func(b *testing.B) { benchLockPath(b, Config{LuaOnly: true}) })
}

// benchLockPath: with LuaOnly the release script runs in gopher-lua instead
// of natively; the difference is why the native fast path is kept.
func benchLockPath(b *testing.B, cfg Config) {
	n := startNode(b, cfg)
	c, err := net.Dial("tcp", n.Addr())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	_, _ = c.Write(enc("SCRIPT", "LOAD", scripts.Release.Text))
	if _, err := readReply(r, nil, 0); err != nil {
		b.Fatal(err)
	}
	const depth = 16
	var batch []byte
	for i := 0; i < depth; i++ {
		k := "lock" + strconv.Itoa(i)
		batch = append(batch, enc("SET", k, "token-0123456789abcdef", "NX", "PX", "10000")...)
		batch = append(batch, enc("EVALSHA", scripts.Release.SHA, "1", k, "token-0123456789abcdef")...)
	}
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += depth {
		if _, err := c.Write(batch); err != nil {
			b.Fatal(err)
		}
		for j := 0; j < 2*depth; j++ {
			if buf, err = readReply(r, buf[:0], 0); err != nil {
				b.Fatal(err)
			}
		}
	}
}
