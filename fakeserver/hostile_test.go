package fakeserver

import (
	"bytes"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/redcon"
)

// expectErrorOrClose sends b and checks the node answers with an error
// reply and/or closes the connection, within a bounded time.
func expectErrorOrClose(t *testing.T, addr string, b []byte, wantErr string) {
	t.Helper()
	c := dial(t, addr)
	_ = c.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, _ = c.c.Write(b) // the server may close before reading it all
	got := ""
	for i := 0; i < 100; i++ {
		r, err := c.tryRead(3 * time.Second)
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("%.40q: neither error nor close within 3s (got %q)", b, got)
			}
			break // closed
		}
		got += r
		if hasPrefix(r, "-") && (wantErr == "" || strings.Contains(got, wantErr)) {
			break
		}
	}
	if wantErr != "" && !strings.Contains(got, wantErr) {
		t.Errorf("%.40q: got %q, want it to contain %q", b, got, wantErr)
	}
}

func TestHostileClients(t *testing.T) {
	n := startNode(t, Config{})
	good := dial(t, n.Addr())
	garbage := make([]byte, 64<<10)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range garbage {
		garbage[i] = byte(r.IntN(256))
	}
	garbage[0] = '*' // start as a multibulk so it is a protocol error
	cases := []struct {
		name string
		in   []byte
		want string
	}{
		{"negative bulk", []byte("*1\r\n$-2\r\n"), "-ERR Protocol error: invalid bulk length\r\n"},
		{"huge bulk", []byte("*1\r\n$99999999999\r\n"), "-ERR Protocol error: invalid bulk length\r\n"},
		{"overflowing bulk", []byte("*1\r\n$9223372036854775807\r\n"), "-ERR Protocol error: invalid bulk length\r\n"},
		{"bulk over limit", []byte("*2\r\n$3\r\nGET\r\n$1048577\r\n"), "invalid bulk length"},
		{"inline huge length", []byte("$99999999999\r\n"), "-ERR unknown command '$99999999999'"},
		{"huge count", []byte("*99999999\r\n"), "-ERR Protocol error: invalid multibulk length\r\n"},
		{"bad count", []byte("*x\r\n"), "invalid multibulk length"},
		{"deep nesting", bytes.Repeat([]byte("*1\r\n"), 100000), "-ERR Protocol error: expected '$', got '*'\r\n"},
		{"missing CRLF after bulk", []byte("*1\r\n$4\r\nPINGxx"), "invalid bulk length"},
		{"long inline", bytes.Repeat([]byte("a"), 100<<10), "-ERR Protocol error: too big inline request\r\n"},
		{"unbalanced quotes", []byte("set a \"b\r\n"), "unbalanced quotes"},
		{"garbage", garbage, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expectErrorOrClose(t, n.Addr(), tc.in, tc.want)
			eqReply(t, "other client still served", good.do("PING"), pongReply)
		})
	}

	// Half frames then silence: the node keeps serving, and Close does not hang.
	var silent []*tconn
	for _, half := range []string{"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100\r\nabc", "*2\r\n$3\r\nGE", "*", "PIN"} {
		c := dial(t, n.Addr())
		_, _ = c.c.Write([]byte(half))
		silent = append(silent, c)
	}
	eqReply(t, "served beside half frames", good.do("SET", "x", "1"), okReply)
	// a request exactly at the bulk limit is accepted
	big := strings.Repeat("v", MaxBulkLen)
	eqReply(t, "max bulk", good.do("SET", "big", big), okReply)
	if v, _ := n.Get("big"); len(v) != MaxBulkLen {
		t.Errorf("big value has %d bytes", len(v))
	}
	done := make(chan struct{})
	go func() { _ = n.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close hung with half-frame clients connected")
	}
	for _, c := range silent {
		if _, err := c.tryRead(2 * time.Second); err == nil {
			t.Error("half-frame client got a reply instead of a close")
		}
	}
}

// TestStreamingMemoryBounded pipelines many MB of valid requests in chunks
// that never align with request boundaries: redcon's reader alone would
// grow its buffer with the stream; through the validator it stays bounded.
func TestStreamingMemoryBounded(t *testing.T) {
	n := startNode(t, Config{})
	c := dial(t, n.Addr())
	payload := strings.Repeat("x", 1000)
	const cmds = 12000 // about 12 MB
	got := make(chan int64, 1)
	go func() {
		// reader: discard replies until every one arrived (or the conn dies)
		_ = c.c.SetReadDeadline(time.Now().Add(60 * time.Second))
		k, _ := io.CopyN(io.Discard, c.c, int64(cmds*len(bulk(payload))))
		got <- k
	}()
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := ms.HeapInuse
	req := enc("ECHO", payload)
	var stream []byte
	for i := 0; i < 200; i++ {
		stream = append(stream, req...)
	}
	_ = c.c.SetWriteDeadline(time.Now().Add(60 * time.Second))
	peak := uint64(0)
	for sent := 0; sent < cmds; sent += 200 {
		for off := 0; off < len(stream); off += 997 { // odd chunks split requests
			end := min(off+997, len(stream))
			if _, err := c.c.Write(stream[off:end]); err != nil {
				t.Fatalf("write: %v", err)
			}
		}
		if sent%2000 == 0 {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
		}
	}
	if k := <-got; k != int64(cmds*len(bulk(payload))) {
		t.Fatalf("read %d reply bytes, want %d", k, cmds*len(bulk(payload)))
	}
	eqReply(t, "after stream", dial(t, n.Addr()).do("PING"), pongReply)
	if growth := int64(peak) - int64(before); growth > 32<<20 {
		t.Errorf("heap grew by %d MB while streaming 12 MB", growth>>20)
	}
}

// memConn feeds fixed bytes to fconn in tiny random reads.
type memConn struct {
	net.Conn
	r   *bytes.Reader
	rnd *rand.Rand
	out bytes.Buffer
}

func (m *memConn) Read(p []byte) (int, error) {
	if len(p) > 1 {
		p = p[:1+m.rnd.IntN(len(p))]
	}
	return m.r.Read(p)
}
func (m *memConn) Write(p []byte) (int, error) { return m.out.Write(p) }
func (m *memConn) Close() error                { return nil }

// readAllGuarded runs redcon's reader over the validated stream of in.
func readAllGuarded(in []byte, seed uint64) (cmds int, out string) {
	mc := &memConn{r: bytes.NewReader(in), rnd: rand.New(rand.NewPCG(seed, 7))}
	fc := newFconn(mc, &Node{})
	rd := redcon.NewReader(fc)
	for i := 0; i < 1<<20; i++ {
		c, err := rd.ReadCommands()
		if err != nil {
			break
		}
		cmds += len(c)
	}
	return cmds, mc.out.String()
}

// TestRedconUnguardedPanics shows why the validator exists: redcon's own
// reader panics on an overflowing bulk length, the guarded one answers with
// a protocol error.
func TestRedconUnguardedPanics(t *testing.T) {
	in := []byte("*1\r\n$9223372036854775807\r\n")
	panicked := func() (p bool) {
		defer func() { p = recover() != nil }()
		rd := redcon.NewReader(bytes.NewReader(in))
		for i := 0; i < 10; i++ {
			if _, err := rd.ReadCommands(); err != nil {
				return false
			}
		}
		return false
	}()
	t.Logf("redcon's unguarded reader panicked: %v", panicked)
	if _, out := readAllGuarded(in, 1); out != "-ERR Protocol error: invalid bulk length\r\n" {
		t.Errorf("guarded reader replied %q", out)
	}
}

// TestValidatorRefusesOverflow: a length of 19 digits above int64's range
// is refused as Redis's string2ll refuses it, not wrapped to a negative
// length (CI's fuzzer once found the wrap as an index panic).
func TestValidatorRefusesOverflow(t *testing.T) {
	for in, want := range map[string]string{
		"*1\r\n$9999999999999999999\r\n": "-ERR Protocol error: invalid bulk length\r\n",
		"*1\r\n$9223372036854775808\r\n": "-ERR Protocol error: invalid bulk length\r\n",
		"*9999999999999999999\r\n":       "-ERR Protocol error: invalid multibulk length\r\n",
		"*9223372036854775807\r\n":       "-ERR Protocol error: invalid multibulk length\r\n",
	} {
		if _, out := readAllGuarded([]byte(in), 1); out != want {
			t.Errorf("%q: replied %q, want %q", in, out, want)
		}
	}
}

func TestValidatorKeepsValidStreams(t *testing.T) {
	var in []byte
	want := 0
	for i := 0; i < 300; i++ {
		in = append(in, enc("SET", "key", strings.Repeat("v", i*37))...)
		in = append(in, "PING\r\n"...)
		in = append(in, "*0\r\n"...)
		want += 2
	}
	for seed := uint64(0); seed < 5; seed++ {
		if got, out := readAllGuarded(in, seed); got != want || out != "" {
			t.Fatalf("seed %d: %d commands (want %d), wrote %q", seed, got, want, out)
		}
	}
}

func FuzzGuardedReader(f *testing.F) {
	for _, s := range []string{
		"*1\r\n$-2\r\n", "$99999999999\r\n", "*1\r\n$99999999999\r\n", "*1\r\n*1\r\n*1\r\n",
		"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", "PING\r\n", "set a \"b\r\n", "*-1\r\n", "*0\r\n",
		"*1\r\n$9223372036854775807\r\n", "*1\r\n$9999999999999999999\r\n", "*9999999999999999999\r\n",
		"*1\r\n$9223372036854775808\r\n", "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100\r\nabc",
	} {
		f.Add([]byte(s), uint64(1))
	}
	f.Fuzz(func(t *testing.T, in []byte, seed uint64) {
		readAllGuarded(in, seed) // must not panic or hang
	})
}

// TestNonReadingClientBounded pipelines requests whose replies are large
// and never reads them: the node must block on the socket instead of
// buffering hundreds of MB, with and without latency, and keep serving
// others.
func TestNonReadingClientBounded(t *testing.T) {
	for _, lat := range []time.Duration{0, time.Millisecond} {
		n := startNode(t, Config{})
		n.SetLatency(lat, 0)
		good := dial(t, n.Addr())
		big := strings.Repeat("v", MaxBulkLen)
		eqReply(t, "set big", good.do("SET", "big", big), okReply)
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		before := ms.HeapInuse
		hog := dial(t, n.Addr())
		req := enc("GET", "big")
		var batch []byte
		for i := 0; i < 300; i++ { // 300 MB of replies
			batch = append(batch, req...)
		}
		batch = append(batch, bytes.Repeat([]byte("x\r\n"), 200000)...) // 10 MB of error replies
		go func() { _, _ = hog.c.Write(batch) }()
		time.Sleep(500 * time.Millisecond)
		eqReply(t, "others served", good.do("PING"), pongReply)
		runtime.ReadMemStats(&ms)
		if growth := int64(ms.HeapInuse) - int64(before); growth > 48<<20 {
			t.Errorf("latency %v: heap grew %d MB for a client that does not read", lat, growth>>20)
		}
		_ = hog.c.Close()
		_ = n.Close()
	}
}

// genConn generates an endless pipeline of one request, in random-sized
// reads, up to left bytes.
type genConn struct {
	net.Conn
	unit []byte
	off  int
	left int
	rnd  *rand.Rand
}

func (g *genConn) Read(p []byte) (int, error) {
	if g.left <= 0 {
		return 0, io.EOF
	}
	k := 1 + g.rnd.IntN(len(p))
	for n := 0; n < k; {
		c := copy(p[n:k], g.unit[g.off:])
		n += c
		g.off = (g.off + c) % len(g.unit)
	}
	g.left -= k
	return k, nil
}
func (g *genConn) Write(p []byte) (int, error) { return len(p), nil }
func (g *genConn) Close() error                { return nil }

// TestGuardBoundsRedconBuffer streams 8 MB of small pipelined requests in
// random-sized reads. redcon's reader alone lets its buffer (and the batch
// of commands it returns) grow with the stream; behind fconn each batch
// stays within a few tens of KB, and the stream arrives intact.
func TestGuardBoundsRedconBuffer(t *testing.T) {
	unit := enc("SET", "key:000001", strings.Repeat("x", 40))
	const total = 8 << 20
	maxBatch := func(r io.Reader) (batch, cmds int) {
		rd := redcon.NewReader(r)
		for {
			c, err := rd.ReadCommands()
			if err != nil {
				return batch, cmds
			}
			for _, cmd := range c {
				if string(cmd.Raw) != string(unit) {
					t.Fatalf("corrupt command %q", cmd.Raw)
				}
			}
			cmds += len(c)
			batch = max(batch, len(c))
		}
	}
	rawBatch, _ := maxBatch(&genConn{unit: unit, left: total, rnd: rand.New(rand.NewPCG(1, 1))})
	g := &genConn{unit: unit, left: total, rnd: rand.New(rand.NewPCG(1, 1))}
	guardBatch, cmds := maxBatch(newFconn(g, &Node{}))
	t.Logf("largest batch: redcon alone %d commands (%d KB), guarded %d (%d KB)",
		rawBatch, rawBatch*len(unit)>>10, guardBatch, guardBatch*len(unit)>>10)
	if guardBatch*len(unit) > 64<<10 {
		t.Errorf("guarded batch of %d commands (%d KB): redcon's buffer is growing", guardBatch, guardBatch*len(unit)>>10)
	}
	if want := (total - g.left) / len(unit); cmds < want-1 || cmds > want {
		t.Errorf("guarded reader delivered %d commands, want %d", cmds, want)
	}
}
