package fakeserver

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

func startNode(t testing.TB, cfg Config) *Node {
	t.Helper()
	n, err := StartNode(cfg)
	if err != nil {
		t.Fatalf("StartNode: %v", err)
	}
	t.Cleanup(func() { _ = n.Close() })
	return n
}

// tconn is a minimal raw RESP test client: it returns each reply's exact
// bytes so tests can compare them byte for byte.
type tconn struct {
	t testing.TB
	c net.Conn
	r *bufio.Reader
}

func dial(t testing.TB, addr string) *tconn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &tconn{t: t, c: c, r: bufio.NewReader(c)}
}

func enc(args ...string) []byte {
	b := []byte("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b = append(b, "$"+strconv.Itoa(len(a))+"\r\n"+a+"\r\n"...)
	}
	return b
}

func (c *tconn) send(args ...string) {
	c.t.Helper()
	_ = c.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.c.Write(enc(args...)); err != nil {
		c.t.Fatalf("write %q: %v", args, err)
	}
}

func (c *tconn) read() string {
	c.t.Helper()
	// generous: a reply that must come (a hostile script stopped by its
	// limits runs seconds under -race beside other work)
	s, err := c.tryRead(30 * time.Second)
	if err != nil {
		c.t.Fatalf("read reply: %v", err)
	}
	return s
}

func (c *tconn) tryRead(d time.Duration) (string, error) {
	_ = c.c.SetReadDeadline(time.Now().Add(d))
	b, err := readReply(c.r, nil, 0)
	return string(b), err
}

// do sends one command and returns its raw reply.
func (c *tconn) do(args ...string) string {
	c.t.Helper()
	c.send(args...)
	return c.read()
}

// readReply appends one complete RESP2/RESP3 reply to dst.
func readReply(r *bufio.Reader, dst []byte, depth int) ([]byte, error) {
	if depth > 32 {
		return dst, errors.New("reply nested too deep")
	}
	line, err := r.ReadSlice('\n')
	if err != nil {
		return dst, err
	}
	dst = append(dst, line...)
	if len(line) < 3 {
		return dst, fmt.Errorf("short line %q", line)
	}
	body := string(line[1 : len(line)-2])
	switch line[0] {
	case '+', '-', ':', '_', '#', ',', '(':
		return dst, nil
	case '$', '!', '=':
		n, err := strconv.Atoi(body)
		if err != nil {
			return dst, err
		}
		if n < 0 {
			return dst, nil
		}
		buf := make([]byte, n+2)
		if _, err := ioReadFull(r, buf); err != nil {
			return dst, err
		}
		return append(dst, buf...), nil
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(body)
		if err != nil {
			return dst, err
		}
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		for i := 0; i < n; i++ {
			if dst, err = readReply(r, dst, depth+1); err != nil {
				return dst, err
			}
		}
		return dst, nil
	}
	return dst, fmt.Errorf("bad type byte in %q", line)
}

func ioReadFull(r *bufio.Reader, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		k, err := r.Read(b[n:])
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// resp helpers for expected replies
func bulk(s string) string     { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }
func integer(i int64) string   { return ":" + strconv.FormatInt(i, 10) + "\r\n" }
func errReply(s string) string { return "-" + s + "\r\n" }

const (
	okReply   = "+OK\r\n"
	nullBulk  = "$-1\r\n"
	resp3Nil  = "_\r\n"
	pongReply = "+PONG\r\n"
)

func eqReply(t testing.TB, what, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s: got %q, want %q", what, got, want)
	}
}

func hasPrefix(s, p string) bool { return strings.HasPrefix(s, p) }

func newReader(c net.Conn) *bufio.Reader { return bufio.NewReader(c) }
