package mux

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redmux/redmux/internal/nodeaddr"
	"github.com/redmux/redmux/internal/redisproc"
	"github.com/redmux/redmux/internal/redisproc/redistest"
	"github.com/redmux/redmux/resp"
)

// setGet is the script of the RESP3 cluster test: it sets its key to its
// argument and returns what GET then reads.
const setGet = "redis.call('SET', KEYS[1], ARGV[1]); return redis.call('GET', KEYS[1])"

// clusterDo runs one command routed by key on node 0 of c and returns its
// reply, and whether it was redirected (MOVED or ASK followed).
func clusterDo(c *Client, b *Batch, key string, args ...string) (resp.Reply, bool, error) {
	b.Reset()
	b.SetKey(key)
	b.Add(0, resp.AppendCommand(nil, args...))
	if _, err := c.Do(context.Background(), b, Policy{}); err != nil {
		return resp.Reply{}, false, err
	}
	r, err := b.Last(0)
	return r, err == nil && b.call.result(0, 0).redirected, err
}

// TestRedisClusterRESP3: a cluster node whose connections speak RESP3
// (HELLO 3, by the URL's protocol=3 or by Config.RESP3) routes a key to
// every shard, where SET, GET and EVALSHA work and answer in RESP3 (a
// missing key's GET is RESP3's null, HGETALL a map); after a slot
// migration the MOVED is followed within the call (the reply is a
// redirected one) and the slot map moves the slot.
func TestRedisClusterRESP3(t *testing.T) {
	cl := redistest.StartCluster(t, redistest.ClusterOptions{})
	u := nodeaddr.ClusterScheme + "://" + cl.Primaries[0].Addr + "?seed=" + cl.Primaries[1].Addr + "&seed=" + cl.Primaries[2].Addr
	for _, tc := range []struct {
		name, addr string
		resp3      bool
	}{{"protocol=3", u + "&protocol=3", false}, {"Config.RESP3", u, true}} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(Config{Addrs: []string{tc.addr}, RESP3: tc.resp3, Timeout: 5 * time.Second,
				Scripts: []Script{{Text: setGet}}, ReconnectMin: 10 * time.Millisecond, ReconnectMax: 100 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if got := c.Shards(0); len(got) != 3 {
				t.Fatalf("shards %v (node error %v)", got, c.NodeErr(0))
			}
			sha := c.cfg.Scripts[0].SHA
			b := c.NewBatch()
			byShard := map[string]string{} // shard's primary -> a key it serves
			for i := 0; len(byShard) < 3; i++ {
				key := "r3:" + tc.name + ":" + strconv.Itoa(i)
				if _, ok := byShard[c.ShardOf(0, key)]; !ok {
					byShard[c.ShardOf(0, key)] = key
				}
			}
			for addr, key := range byShard {
				if r, _, err := clusterDo(c, b, key, "SET", key, "set"); err != nil || !r.IsOK() {
					t.Fatalf("SET %s on %s: %v %v", key, addr, r, err)
				}
				if r, _, err := clusterDo(c, b, key, "GET", key); err != nil || string(r.Data) != "set" {
					t.Fatalf("GET %s on %s: %v %v", key, addr, r, err)
				}
				if r, _, err := clusterDo(c, b, key, "EVALSHA", sha, "1", key, "script"); err != nil || string(r.Data) != "script" {
					t.Fatalf("EVALSHA on %s: %v %v", addr, r, err)
				}
				if v := getOn(t, addr, "", key); v != "script" {
					t.Fatalf("%s on its shard %s: %v, want the script's value", key, addr, v)
				}
				missing := "{" + key + "}:missing"
				if r, _, err := clusterDo(c, b, missing, "GET", missing); err != nil || r.Type != resp.TypeNull {
					t.Fatalf("GET of a missing key on %s: type %q %v, want RESP3's null", addr, r.Type, err)
				}
				hash := "{" + key + "}:hash"
				if _, _, err := clusterDo(c, b, hash, "HSET", hash, "f", "v"); err != nil {
					t.Fatal(err)
				}
				if r, _, err := clusterDo(c, b, hash, "HGETALL", hash); err != nil || r.Type != resp.TypeMap || r.Len() != 2 {
					t.Fatalf("HGETALL on %s: type %q len %d %v, want a RESP3 map", addr, r.Type, r.Len(), err)
				}
			}
			testMovedRESP3(t, cl, c, byShard[cl.Primaries[0].Addr])
		})
	}
}

// testMovedRESP3 migrates key's slot to the next primary under c and
// checks that the next SET and EVALSHA follow the MOVED.
func testMovedRESP3(t *testing.T, cl *redisproc.Cluster, c *Client, key string) {
	b := c.NewBatch()
	k, err := cl.Shard(c.ShardOf(0, key))
	if err != nil {
		t.Fatal(err)
	}
	to := cl.Primaries[(k+1)%len(cl.Primaries)]
	// the slot holds key and its {key}:hash
	if n, err := cl.MoveSlot(KeySlot(key), cl.Primaries[k], to); err != nil || n != 2 {
		t.Fatalf("MoveSlot: %d keys, %v", n, err)
	}
	r, redirected, err := clusterDo(c, b, key, "SET", key, "moved")
	if err != nil || !r.IsOK() || !redirected {
		t.Fatalf("SET after the migration: %v %v, redirected %v: want OK by the MOVED followed", r, err, redirected)
	}
	if v := getOn(t, to.Addr, "", key); v != "moved" {
		t.Fatalf("GET on the new primary: %v", v)
	}
	deadline := time.Now().Add(20 * time.Second)
	for c.ShardOf(0, key) != to.Addr {
		if time.Now().After(deadline) {
			t.Fatalf("the map still names %s for the slot, want %s", c.ShardOf(0, key), to.Addr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	r, redirected, err = clusterDo(c, b, key, "EVALSHA", c.cfg.Scripts[0].SHA, "1", key, "after")
	if err != nil || string(r.Data) != "after" || redirected {
		t.Fatalf("EVALSHA on the new primary: %v %v, redirected %v", r, err, redirected)
	}
}
