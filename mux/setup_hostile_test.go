package mux

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// A node that answers the set-up's first command with a bulk far larger
// than MaxReplyBytes: the set-up fails at that bound, with an error that
// says so, instead of buffering the reply until the dial deadline.
func TestSetupReplyBoundedByMaxReplyBytes(t *testing.T) {
	const max = 64 << 10
	h := startHostile(t, func(h *hostile) {
		h.reply = func(cn *hconn, args [][]byte, out []byte) []byte {
			if cn.n > 0 {
				return out
			}
			// declares 200 MB, sends 4 MiB of it, then nothing
			return append([]byte("$200000000\r\n"), bytes.Repeat([]byte{'x'}, 4<<20)...)
		}
	})
	c, err := New(Config{Addrs: []string{h.addr()}, MaxReplyBytes: max, DialTimeout: 30 * time.Second,
		ReconnectMin: time.Hour, ReconnectMax: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = c.NodeErr(0)
	if err == nil || !strings.Contains(err.Error(), "reply larger than MaxReplyBytes (65536)") {
		t.Fatalf("node error %v, want the set-up refused at MaxReplyBytes", err)
	}
}

// Push frames before the set-up's replies are skipped, however many, while
// the buffer keeps only what is not parsed yet: 2 MiB of them against a
// 64 KiB MaxReplyBytes, and the set-up still completes.
func TestSetupSkipsManyPushFrames(t *testing.T) {
	push := []byte(">2\r\n+message\r\n+hello\r\n")
	h := startHostile(t, func(h *hostile) {
		h.reply = func(cn *hconn, args [][]byte, out []byte) []byte {
			if cn.n > 0 {
				return out
			}
			return append(bytes.Repeat(push, (2<<20)/len(push)), out...)
		}
	})
	c, err := New(Config{Addrs: []string{h.addr()}, MaxReplyBytes: 64 << 10, DialTimeout: 30 * time.Second,
		Timeout: 10 * time.Second, ReconnectMin: time.Hour, ReconnectMax: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.NodeErr(0); err != nil {
		t.Fatalf("node error %v, want the set-up done past the push frames", err)
	}
	b := c.NewBatch()
	b.Broadcast([]byte("*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n"))
	if _, err := c.Do(t.Context(), b, Policy{}); err != nil {
		t.Fatal(err)
	}
	if r, err := b.Last(0); err != nil || string(r.Data) != "hi" {
		t.Fatalf("ECHO hi after the set-up: %q %v", r.Data, err)
	}
}
