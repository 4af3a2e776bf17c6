package mux

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redmux/redmux/internal/nodeaddr"
	"github.com/redmux/redmux/resp"
)

// Redirected sends obey MaxQueuedBytes and MaxPending (issue 46): every
// command of a batch to shard A gets MOVED to shard B, whose primary stopped
// reading after its set-up. Before, each redirect was queued on B's
// connection whatever its queue held (274 MB of heap in the review); now a
// redirect that finds B's queue full is not sent, and its MOVED is the
// command's reply. The bound is checked on B's connection's own counts,
// not by timing.
func TestRedirectBounded(t *testing.T) {
	t.Run("MaxQueuedBytes", func(t *testing.T) {
		// more than the loopback socket buffers take, so the queue fills
		testRedirectBounded(t, Config{MaxQueuedBytes: 1 << 20}, 600, 64<<10)
	})
	t.Run("MaxPending", func(t *testing.T) {
		testRedirectBounded(t, Config{MaxPending: 64}, 1000, 16)
	})
}

func testRedirectBounded(t *testing.T, cfg Config, n, size int) {
	var slotsReply string
	stall := startHostile(t, func(h *hostile) {
		h.reply = func(cn *hconn, args [][]byte, out []byte) []byte {
			switch string(args[0]) {
			case "SET":
				<-cn.h.done // stops reading: the connection's queue fills
			case "ROLE":
				return []byte("*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n")
			case "CLUSTER":
				return clusterReply(args, slotsReply)
			}
			return out
		}
	})
	movedTo := stall.addr()
	src := startHostile(t, func(h *hostile) {
		h.reply = func(cn *hconn, args [][]byte, out []byte) []byte {
			switch string(args[0]) {
			case "SET":
				return []byte("-MOVED " + strconv.Itoa(KeySlot(string(args[1]))) + " " + movedTo + "\r\n")
			case "ROLE":
				return []byte("*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n")
			case "CLUSTER":
				return clusterReply(args, slotsReply)
			}
			return out
		}
	})
	slotsReply = slotsOf(t, src.addr(), stall.addr())
	cfg.Addrs = []string{nodeaddr.ClusterScheme + "://" + src.addr() + "?seed=" + stall.addr()}
	cfg.Timeout = time.Second
	cfg.HardTimeout = time.Hour // the stalled connection is not closed under the check
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	defer stall.close() // before c.Close: the stalled reader lets go
	if err := c.NodeErr(0); err != nil {
		t.Fatal(err)
	}
	var key string
	for k := 0; key == ""; k++ {
		if s := KeySlot("r" + strconv.Itoa(k)); s < ClusterSlots/2 {
			key = "r" + strconv.Itoa(k)
		}
	}
	b := c.NewBatch()
	b.SetKey(key)
	cmd := resp.AppendCommand(nil, "SET", key, strings.Repeat("v", size))
	for k := 0; k < n; k++ {
		b.Add(0, cmd)
	}
	_, _ = c.Do(context.Background(), b, Policy{})
	to := c.shardConns(0, shardIndex(c, stall.addr()))[0]
	to.mu.Lock()
	queued, pending := len(to.wq)+to.inflight, to.q.n
	to.mu.Unlock()
	r := c.cfg
	t.Logf("on the stalled shard: %d bytes queued (cap %d), %d replies pending (cap %d)", queued, r.MaxQueuedBytes, pending, r.MaxPending)
	if queued > r.MaxQueuedBytes+len(cmd) {
		t.Errorf("%d bytes queued on the stalled shard, cap %d", queued, r.MaxQueuedBytes)
	}
	if pending > r.MaxPending+1 {
		t.Errorf("%d replies pending on the stalled shard, cap %d", pending, r.MaxPending)
	}
}

// slotsOf is a CLUSTER SLOTS reply giving the first half of the slots to
// a, the second to b.
func slotsOf(t *testing.T, a, b string) string {
	t.Helper()
	var out []byte
	out = resp.AppendArrayHeader(out, 2)
	for k, addr := range []string{a, b} {
		h, p, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatal(err)
		}
		port, _ := strconv.Atoi(p)
		out = resp.AppendArrayHeader(out, 3)
		out = resp.AppendInt(out, int64(k*ClusterSlots/2))
		out = resp.AppendInt(out, int64((k+1)*ClusterSlots/2-1))
		out = resp.AppendArrayHeader(out, 2)
		out = resp.AppendBulkString(out, h)
		out = resp.AppendInt(out, int64(port))
	}
	return string(out)
}

// clusterReply answers CLUSTER SHARDS as Redis before 7 does (unknown) and
// CLUSTER SLOTS with slots.
func clusterReply(args [][]byte, slots string) []byte {
	if len(args) > 1 && strings.EqualFold(string(args[1]), "SLOTS") {
		return []byte(slots)
	}
	return []byte("-ERR unknown subcommand\r\n")
}

// shardIndex is the index of the shard whose primary is addr.
func shardIndex(c *Client, addr string) int {
	m := c.nodes[0].cluster.m.Load()
	for k, a := range m.addrs {
		if a == addr {
			return k
		}
	}
	return -1
}
