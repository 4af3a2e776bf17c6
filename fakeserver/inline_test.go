package fakeserver

import (
	"bytes"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/redcon"
)

// allocDuring returns the bytes allocated while f runs.
func allocDuring(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// chunkConn feeds fixed bytes to fconn in reads of at most chunk bytes, as
// a socket delivers a large request.
type chunkConn struct {
	memConn
	chunk int
}

func (c *chunkConn) Read(p []byte) (int, error) {
	if len(p) > c.chunk {
		p = p[:c.chunk]
	}
	return c.r.Read(p)
}

func readAllChunked(in []byte, chunk int) (cmds int, args int, out string) {
	mc := &chunkConn{memConn: memConn{r: bytes.NewReader(in)}, chunk: chunk}
	fc := newFconn(mc, &Node{})
	rd := redcon.NewReader(fc)
	for i := 0; i < 1<<20; i++ {
		c, err := rd.ReadCommands()
		if err != nil {
			break
		}
		cmds += len(c)
		for _, x := range c {
			args += len(x.Args)
		}
	}
	return cmds, args, mc.out.String()
}

// TestInlineRequestCostBounded (issue 16 D8): a 64 KB inline request of
// one-byte words cost redcon's inline parser a copy of the rest of the line
// per word (quadratic: seconds of CPU, 1.2 GB for three requests). The node
// must handle such requests in memory proportional to their size, as Redis
// does, and still parse them into the right arguments.
func TestInlineRequestCostBounded(t *testing.T) {
	words := (MaxInlineLen - 2) / 2
	line := strings.Repeat("a ", words)
	var in []byte
	for i := 0; i < 3; i++ {
		in = append(in, "ECHO "...)
		in = append(in, line[:len(line)-6]...)
		in = append(in, "\r\n"...)
	}
	var cmds, args int
	var out string
	alloc := allocDuring(func() { cmds, args, out = readAllChunked(in, 16<<10) })
	t.Logf("3 inline requests of %d bytes: %d commands, %d args, %d MB allocated", len(in)/3, cmds, args, alloc>>20)
	if cmds != 3 || out != "" {
		t.Fatalf("got %d commands, wrote %q", cmds, out)
	}
	if want := 3 * (1 + (len(line)-6)/2); args != want {
		t.Errorf("got %d args, want %d", args, want)
	}
	if alloc > 32<<20 {
		t.Errorf("%d MB allocated for %d bytes of inline requests: not bounded by their size", alloc>>20, len(in))
	}
}

// TestMultibulkRequestCostBounded: the largest multibulk request the node
// accepts, made of many tiny arguments and arriving in socket-sized reads,
// must cost memory proportional to its size (redcon's reader re-parses an
// incomplete request from its start on every read).
func TestMultibulkRequestCostBounded(t *testing.T) {
	const nargs = 150000
	in := []byte("*" + strconv.Itoa(nargs+1) + "\r\n$4\r\nECHO\r\n")
	in = append(in, bytes.Repeat([]byte("$1\r\na\r\n"), nargs)...)
	var cmds, args int
	var out string
	alloc := allocDuring(func() { cmds, args, out = readAllChunked(in, 16<<10) })
	t.Logf("one multibulk request of %d KB (%d args): %d MB allocated", len(in)>>10, nargs+1, alloc>>20)
	if cmds != 1 || args != nargs+1 || out != "" {
		t.Fatalf("got %d commands, %d args, wrote %q", cmds, args, out)
	}
	if alloc > 64<<20 {
		t.Errorf("%d MB allocated for a %d KB request: not bounded by its size", alloc>>20, len(in)>>10)
	}
}
