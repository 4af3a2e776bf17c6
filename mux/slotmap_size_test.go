package mux

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redmux/redmux/internal/nodeaddr"
	"github.com/redmux/redmux/resp"
)

// A slot map larger than 2 MB (16,384 one-slot ranges, two replicas
// each: about 4 MB) is taken when MaxReplyBytes allows it, and refused
// with an error naming MaxReplyBytes when it does not (issue 46: a fixed
// 1 MiB bound refused it whatever MaxReplyBytes said).
func TestSlotMapObeysMaxReplyBytes(t *testing.T) {
	var slots string
	member := func(h *hostile) {
		h.reply = func(cn *hconn, args [][]byte, out []byte) []byte {
			switch string(args[0]) {
			case "ROLE":
				return []byte("*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n")
			case "CLUSTER":
				return clusterReply(args, slots)
			}
			return out
		}
	}
	a, b := startHostile(t, member), startHostile(t, member)
	slots = bigSlots(t, a.addr(), b.addr())
	if len(slots) < 3<<20 {
		t.Fatalf("the map is %d bytes", len(slots))
	}
	for _, tc := range []struct {
		max int
		up  bool
	}{{8 << 20, true}, {1 << 20, false}} {
		c, err := New(Config{Addrs: []string{nodeaddr.ClusterScheme + "://" + a.addr() + "?seed=" + b.addr()},
			MaxReplyBytes: tc.max, DialTimeout: 10 * time.Second, ReconnectMin: time.Hour, ReconnectMax: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		err = c.NodeErr(0)
		shards := c.Shards(0)
		c.Close()
		if tc.up && (err != nil || len(shards) != 2) {
			t.Errorf("MaxReplyBytes %d, a %d-byte map: %v, shards %v", tc.max, len(slots), err, shards)
		}
		if !tc.up && (err == nil || !errors.Is(err, ErrCluster) || !strings.Contains(err.Error(), "MaxReplyBytes")) {
			t.Errorf("MaxReplyBytes %d, a %d-byte map: %v, want refused at MaxReplyBytes", tc.max, len(slots), err)
		}
	}
}

// bigSlots is a CLUSTER SLOTS reply of one-slot ranges, even slots a's,
// odd ones b's, each with two replicas.
func bigSlots(t *testing.T, a, b string) string {
	t.Helper()
	node := func(out []byte, addr string, id int) []byte {
		h, p, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatal(err)
		}
		port, _ := strconv.Atoi(p)
		out = resp.AppendArrayHeader(out, 3)
		out = resp.AppendBulkString(out, h)
		out = resp.AppendInt(out, int64(port))
		return resp.AppendBulkString(out, strings.Repeat(strconv.Itoa(id%10), 40))
	}
	out := resp.AppendArrayHeader(nil, ClusterSlots)
	for s := 0; s < ClusterSlots; s++ {
		out = resp.AppendArrayHeader(out, 5)
		out = resp.AppendInt(out, int64(s))
		out = resp.AppendInt(out, int64(s))
		p := a
		if s%2 == 1 {
			p = b
		}
		out = node(out, p, s)
		out = node(out, "127.0.0.1:1", s+1)
		out = node(out, "127.0.0.1:2", s+2)
	}
	return string(out)
}
