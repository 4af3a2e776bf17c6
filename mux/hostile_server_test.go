package mux

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redmux/redmux/resp"
)

// hostile is a small RESP server for tests: it answers ECHO with its
// argument, SCRIPT LOAD with the script's SHA1, and +OK to anything else,
// and misbehaves as its hooks say.
type hostile struct {
	ln    net.Listener
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns []net.Conn
	done  chan struct{}
	// reply may rewrite or delay the reply to one command (args[0]
	// upper-cased); it runs on the connection's goroutine. nil: normal.
	reply func(cn *hconn, args [][]byte, out []byte) []byte
	// after runs once after each connection's first reply (set-up done).
	after func(cn *hconn)
	evals atomic.Int64
	once  sync.Once // close runs once (a test may close before its cleanup)
}

type hconn struct {
	net.Conn
	h      *hostile
	n      int // commands answered
	mode   int
	rng    *rand.Rand
	wmu    sync.Mutex
	closed atomic.Bool
}

func (c *hconn) send(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.Write(b)
	return err
}

func startHostile(t testing.TB, setup func(h *hostile)) *hostile {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &hostile{ln: ln, done: make(chan struct{})}
	if setup != nil {
		setup(h)
	}
	h.wg.Add(1)
	go h.serve()
	t.Cleanup(h.close)
	return h
}

func (h *hostile) addr() string { return h.ln.Addr().String() }

func (h *hostile) close() { h.once.Do(h.shut) }

func (h *hostile) shut() {
	close(h.done)
	_ = h.ln.Close()
	h.mu.Lock()
	for _, c := range h.conns {
		_ = c.Close()
	}
	h.mu.Unlock()
	h.wg.Wait()
}

func (h *hostile) serve() {
	defer h.wg.Done()
	seed := uint64(0)
	for {
		nc, err := h.ln.Accept()
		if err != nil {
			return
		}
		seed++
		h.mu.Lock()
		h.conns = append(h.conns, nc)
		h.mu.Unlock()
		c := &hconn{Conn: nc, h: h, rng: rand.New(rand.NewPCG(seed, 42))}
		h.wg.Add(1)
		go c.loop()
	}
}

func (c *hconn) loop() {
	defer c.h.wg.Done()
	defer c.Close()
	buf := make([]byte, 0, 64<<10)
	tmp := make([]byte, 32<<10)
	for {
		n, err := c.Read(tmp)
		if err != nil {
			return
		}
		buf = append(buf, tmp[:n]...)
		off := 0
		var out []byte
		for {
			rep, m, err := resp.Parse(buf[off:])
			if err != nil {
				break
			}
			off += m
			var args [][]byte
			it := rep.Iter()
			var a resp.Reply
			for it.Next(&a) {
				args = append(args, bytes.Clone(a.Data))
			}
			if len(args) == 0 {
				return
			}
			name := string(bytes.ToUpper(args[0]))
			var r []byte
			switch {
			case name == "ECHO" && len(args) == 2:
				r = resp.AppendBulk(nil, args[1])
			case name == "SCRIPT" && len(args) == 3:
				sum := sha1.Sum(args[2])
				r = resp.AppendBulkString(nil, hex.EncodeToString(sum[:]))
			case name == "EVAL":
				c.h.evals.Add(1)
				r = []byte("+OK\r\n")
			default:
				r = []byte("+OK\r\n")
			}
			if c.h.reply != nil {
				r = c.h.reply(c, append([][]byte{[]byte(name)}, args[1:]...), r)
			}
			out = append(out, r...)
			c.n++
		}
		buf = append(buf[:0], buf[off:]...)
		if len(out) > 0 && c.write(out) != nil {
			return
		}
	}
}

// write sends out as the connection's mode says: at once, byte by byte,
// after a delay, or not at all (then the connection is dropped).
func (c *hconn) write(out []byte) error {
	switch c.mode {
	case 1: // 1-byte writes
		for i := range out {
			if err := c.send(out[i : i+1]); err != nil {
				return err
			}
		}
		return nil
	case 2: // delays
		time.Sleep(time.Duration(c.rng.IntN(3000)) * time.Microsecond)
	case 3: // stalls now and then
		if c.rng.IntN(50) == 0 {
			time.Sleep(60 * time.Millisecond)
		}
	case 4: // drops the connection now and then, mid-reply
		if c.rng.IntN(200) == 0 {
			_ = c.send(out[:len(out)/2])
			return errors.New("drop")
		}
	}
	err := c.send(out)
	if c.n > 0 && c.h.after != nil && !c.closed.Swap(true) {
		go c.h.after(c)
	}
	return err
}
