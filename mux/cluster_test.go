package mux

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redmux/redmux/internal/nodeaddr"
	"github.com/redmux/redmux/internal/redisproc"
	"github.com/redmux/redmux/internal/redisproc/redistest"
	"github.com/redmux/redmux/resp"
)

func TestKeySlot(t *testing.T) {
	for key, want := range map[string]int{
		"123456789":            0x31C3, // CRC16/XMODEM's check value
		"foo":                  12182,
		"bar":                  5061,
		"{user1000}.following": KeySlot("user1000"),
		"{user1000}.followers": KeySlot("user1000"),
		"foo{}{bar}":           KeySlot("foo{}{bar}"), // empty tag: the whole key
		"foo{{bar}}zap":        KeySlot("{bar"),
		"foo{bar}{zap}":        KeySlot("bar"),
	} {
		if got := KeySlot(key); got != want {
			t.Errorf("KeySlot(%q) = %d, want %d", key, got, want)
		}
	}
	if KeySlot("foo{}{bar}") == KeySlot("bar") {
		t.Errorf("an empty hash tag must hash the whole key")
	}
}

// TestClusterURLTLS: New refuses a cluster node beside Config.TLS
// (internal/nodeaddr's TestClusterURL parses the URLs).
func TestClusterURLTLS(t *testing.T) {
	if _, err := New(Config{Addrs: []string{"redis-cluster://127.0.0.1:7000"}, TLS: &tls.Config{}}); err == nil || !strings.Contains(err.Error(), "plaintext") {
		t.Errorf("Config.TLS with a cluster node: %v", err)
	}
}

func TestBuildMap(t *testing.T) {
	r := []slotRange{{0, 5460, "a:1"}, {5461, 10922, "b:1"}, {10923, 16383, "c:1"}}
	m, err := buildMap(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.addrs[0] != "a:1" || m.addrs[1] != "b:1" || m.addrs[2] != "c:1" || m.owner[0] != 0 || m.owner[16383] != 2 {
		t.Fatalf("map %v", m.addrs)
	}
	// b fails over to d; a's slot 0 moves to c: a, c keep their indexes
	r2 := []slotRange{{1, 5460, "a:1"}, {0, 0, "c:1"}, {5461, 10922, "d:1"}, {10923, 16383, "c:1"}}
	m2, err := buildMap(r2, m)
	if err != nil {
		t.Fatal(err)
	}
	if m2.addrs[0] != "a:1" || m2.addrs[2] != "c:1" || m2.addrs[1] != "d:1" || m2.owner[0] != 2 || m2.owner[6000] != 1 {
		t.Fatalf("map %v owner[0]=%d", m2.addrs, m2.owner[0])
	}
	// uncovered slots are allowed (they fail their calls), overlaps are not
	if m3, err := buildMap([]slotRange{{0, 100, "a:1"}}, nil); err != nil || m3.owner[101] != noShard {
		t.Fatalf("partial map: %v", err)
	}
	for _, tc := range []struct {
		r    []slotRange
		want string
	}{
		{nil, "empty"},
		{[]slotRange{{0, 10, "a:1"}, {10, 20, "b:1"}}, "two primaries"},
		{[]slotRange{{0, 16384, "a:1"}}, "bad range"},
		{[]slotRange{{5, 4, "a:1"}}, "bad range"},
	} {
		if _, err := buildMap(tc.r, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.r, err, tc.want)
		}
	}
	var many []slotRange
	for k := 0; k <= MaxClusterShards; k++ {
		many = append(many, slotRange{k, k, "n:" + strconv.Itoa(k+1)})
	}
	if _, err := buildMap(many, nil); err == nil || !strings.Contains(err.Error(), "MaxClusterShards") {
		t.Errorf("too many primaries: %v", err)
	}
}

func TestParseSlotMaps(t *testing.T) {
	var p resp.Parser
	// CLUSTER SLOTS: an empty ip is the asked member's host
	slots := "*2\r\n*3\r\n:0\r\n:8191\r\n*3\r\n$9\r\n127.0.0.1\r\n:7000\r\n$2\r\nid\r\n" +
		"*4\r\n:8192\r\n:16383\r\n*2\r\n$0\r\n\r\n:7001\r\n*2\r\n$9\r\n127.0.0.1\r\n:7002\r\n"
	rep, _, err := p.Parse([]byte(slots))
	if err != nil {
		t.Fatal(err)
	}
	got, err := parseSlots(rep, "10.0.0.9")
	if err != nil || len(got) != 2 || got[0] != (slotRange{0, 8191, "127.0.0.1:7000"}) || got[1] != (slotRange{8192, 16383, "10.0.0.9:7001"}) {
		t.Fatalf("%v %v", got, err)
	}
	// CLUSTER SHARDS (RESP2 form): the failed master is skipped
	node := func(ip string, port int, role, health string) string {
		return fmt.Sprintf("*10\r\n$2\r\nip\r\n$%d\r\n%s\r\n$4\r\nport\r\n:%d\r\n$4\r\nrole\r\n$%d\r\n%s\r\n$6\r\nhealth\r\n$%d\r\n%s\r\n$8\r\nendpoint\r\n$0\r\n\r\n",
			len(ip), ip, port, len(role), role, len(health), health)
	}
	shards := "*1\r\n*4\r\n$5\r\nslots\r\n*4\r\n:0\r\n:99\r\n:200\r\n:16383\r\n$5\r\nnodes\r\n*2\r\n" +
		node("127.0.0.1", 7000, "master", "fail") + node("127.0.0.1", 7003, "master", "online")
	rep, _, err = p.Parse([]byte(shards))
	if err != nil {
		t.Fatal(err)
	}
	got, err = parseShards(rep, "x")
	if err != nil || len(got) != 2 || got[0] != (slotRange{0, 99, "127.0.0.1:7003"}) || got[1] != (slotRange{200, 16383, "127.0.0.1:7003"}) {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range []string{":1\r\n", "*1\r\n:1\r\n", "*1\r\n*2\r\n$5\r\nslots\r\n*1\r\n:0\r\n"} {
		rep, _, _ := p.Parse([]byte(bad))
		if _, err := parseShards(rep, "x"); err == nil {
			t.Errorf("parseShards(%q): no error", bad)
		}
		if _, err := parseSlots(rep, "x"); err == nil && bad != "*1\r\n:1\r\n" {
			t.Errorf("parseSlots(%q): no error", bad)
		}
	}
}

// clusterClient makes a client of one cluster node on cl.
func clusterClient(t *testing.T, cl *redisproc.Cluster, cfg Config) *Client {
	t.Helper()
	u := nodeaddr.ClusterScheme + "://" + cl.Primaries[0].Addr
	for _, s := range cl.Addrs()[1:] {
		if strings.Contains(u, "?") {
			u += "&seed=" + s
		} else {
			u += "?seed=" + s
		}
	}
	cfg.Addrs = []string{u}
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// clusterSet runs SET key value on node 0 of c and returns its error.
func clusterSet(c *Client, b *Batch, key, value string) error {
	b.Reset()
	b.SetKey(key)
	b.Add(0, resp.AppendCommand(nil, "SET", key, value))
	if _, err := c.Do(context.Background(), b, Policy{}); err != nil {
		return err
	}
	return b.Err(0)
}

// Every key goes to its slot's primary: the key is on the process that
// CLUSTER KEYSLOT and the slot map say, and nowhere else.
func TestRedisClusterRoutes(t *testing.T) {
	cl := redistest.StartCluster(t, redistest.ClusterOptions{})
	c := clusterClient(t, cl, Config{Incarnations: true})
	if got := c.Shards(0); len(got) != 3 || !c.IsCluster(0) || c.IsCluster(1) {
		t.Fatalf("shards %v", got)
	}
	inc := c.Incarnation(0)
	if inc == nil || !inc.Known || len(inc.RunID) != 3*40 {
		t.Fatalf("incarnation %+v", inc)
	}
	b := c.NewBatch()
	for k := 0; k < 200; k++ {
		key := "route:" + strconv.Itoa(k)
		if err := clusterSet(c, b, key, "v"); err != nil {
			t.Fatalf("SET %s: %v", key, err)
		}
		v, err := redisproc.Command(cl.Primaries[0].Addr, "", "CLUSTER", "KEYSLOT", key)
		if err != nil || v.(int64) != int64(KeySlot(key)) {
			t.Fatalf("CLUSTER KEYSLOT %s = %v (%v), KeySlot %d", key, v, err, KeySlot(key))
		}
		for _, p := range cl.Primaries {
			got, _ := redisproc.Command(p.Addr, "", "EXISTS", key)
			if want := p.Addr == c.ShardOf(0, key); (got == int64(1)) != want {
				t.Fatalf("%s on %s: %v, want %v", key, p.Addr, got, want)
			}
		}
	}
	// a batch without a key cannot be routed
	b.Reset()
	b = c.NewBatch()
	b.Add(0, resp.AppendCommand(nil, "PING"))
	if _, err := c.Do(context.Background(), b, Policy{}); err != nil || !errors.Is(b.Err(0), ErrNotSent) || !strings.Contains(b.Err(0).Error(), "SetKey") {
		t.Fatalf("unkeyed batch: %v / %v", err, b.Err(0))
	}
}

// onLoopbacks runs test on a cluster on 127.0.0.1 and on one on ::1
// (Redis writes a redirect's IPv6 host without brackets: "MOVED 12182
// ::1:7000"), unless this machine has no IPv6 loopback.
func onLoopbacks(t *testing.T, test func(t *testing.T, host string)) {
	for _, host := range []string{"127.0.0.1", "::1"} {
		t.Run(host, func(t *testing.T) {
			if host == "::1" {
				l, err := net.Listen("tcp", "[::1]:0")
				if err != nil {
					t.Skipf("SKIPPED: no IPv6 loopback on this machine (%v): redirects on IPv6 are not tested", err)
				}
				l.Close()
			}
			test(t, host)
		})
	}
}

func TestRedirectAddr(t *testing.T) {
	for _, tc := range []struct{ a, self, want string }{
		{"127.0.0.1:7000", "127.0.0.1:7001", "127.0.0.1:7000"},
		{"::1:7000", "[::1]:7001", "[::1]:7000"},
		{"[::1]:7000", "[::1]:7001", "[::1]:7000"},
		{"fe80::1:2:7000", "", "[fe80::1:2]:7000"},
		{":7000", "10.0.0.5:7001", "10.0.0.5:7000"},
		{"?:7000", "[::1]:7001", "[::1]:7000"},
		{"redis-1.example:6379", "", "redis-1.example:6379"},
		{"nocolon", "", "nocolon"},
	} {
		if got := redirectAddr(tc.a, tc.self); got != tc.want {
			t.Errorf("redirectAddr(%q, %q) = %q, want %q", tc.a, tc.self, got, tc.want)
		}
	}
}

// A slot migrated under the client: a command routed by the old map gets
// MOVED (the command did nothing), which mux follows at once, resending it
// to the primary the reply names, and the map is asked for again, so the
// call succeeds and the next ones go to the new primary directly.
func TestRedisClusterMoved(t *testing.T) { onLoopbacks(t, testRedisClusterMoved) }

func testRedisClusterMoved(t *testing.T, host string) {
	cl := redistest.StartCluster(t, redistest.ClusterOptions{Host: host})
	c := clusterClient(t, cl, Config{})
	b := c.NewBatch()
	key := "moved:1"
	if err := clusterSet(c, b, key, "a"); err != nil {
		t.Fatal(err)
	}
	from := c.ShardOf(0, key)
	k, _ := cl.Shard(from)
	to := cl.Primaries[(k+1)%3]
	n, err := cl.MoveSlot(KeySlot(key), cl.Primaries[k], to)
	if err != nil || n != 1 {
		t.Fatalf("MoveSlot: %d keys, %v", n, err)
	}
	if err := clusterSet(c, b, key, "b"); err != nil {
		t.Fatalf("SET after the migration (MOVED followed): %v", err)
	}
	if v, _ := redisproc.Command(to.Addr, "", "GET", key); v != "b" {
		t.Fatalf("GET on the new primary: %v", v)
	}
	deadline := time.Now().Add(20 * time.Second)
	for c.ShardOf(0, key) != to.Addr {
		if time.Now().After(deadline) {
			t.Fatalf("the map still names %s for the slot, want %s", c.ShardOf(0, key), to.Addr)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A slot half-way through a migration (IMPORTING on the target, MIGRATING
// on the source): a key the source no longer has gets ASK, which mux
// follows with ASKING and the command on the target, in one write; a key
// still on the source is served there. The map is unchanged (the slot is
// still the source's).
func TestRedisClusterAsk(t *testing.T) { onLoopbacks(t, testRedisClusterAsk) }

func testRedisClusterAsk(t *testing.T, host string) {
	cl := redistest.StartCluster(t, redistest.ClusterOptions{Host: host})
	c := clusterClient(t, cl, Config{})
	b := c.NewBatch()
	old, fresh := "{ask}:old", "{ask}:new"
	if err := clusterSet(c, b, old, "a"); err != nil {
		t.Fatal(err)
	}
	k, _ := cl.Shard(c.ShardOf(0, old))
	src, dst := cl.Primaries[k], cl.Primaries[(k+1)%3]
	srcID, _ := redisproc.Command(src.Addr, "", "CLUSTER", "MYID")
	dstID, _ := redisproc.Command(dst.Addr, "", "CLUSTER", "MYID")
	slot := strconv.Itoa(KeySlot(old))
	if _, err := redisproc.Command(dst.Addr, "", "CLUSTER", "SETSLOT", slot, "IMPORTING", srcID.(string)); err != nil {
		t.Fatal(err)
	}
	if _, err := redisproc.Command(src.Addr, "", "CLUSTER", "SETSLOT", slot, "MIGRATING", dstID.(string)); err != nil {
		t.Fatal(err)
	}
	if err := clusterSet(c, b, fresh, "x"); err != nil {
		t.Fatalf("SET of a key the source lacks (ASK followed): %v", err)
	}
	if v, err := redisproc.Command(dst.Addr, "", "CLUSTER", "COUNTKEYSINSLOT", slot); v != int64(1) {
		t.Fatalf("keys of the slot on the target: %v %v, want 1 (the ASK-followed SET)", v, err)
	}
	for _, tc := range []struct{ addr, key, want string }{{src.Addr, old, "a"}, {src.Addr, fresh, ""}} {
		v, err := redisproc.Command(tc.addr, "", "GET", tc.key)
		if tc.want != "" && v != tc.want {
			t.Fatalf("GET %s on %s: %v %v", tc.key, tc.addr, v, err)
		}
		if tc.want == "" && (err == nil || !strings.HasPrefix(err.Error(), "ASK")) {
			t.Fatalf("GET %s on the source: %v %v, want ASK", tc.key, v, err)
		}
	}
	if err := clusterSet(c, b, old, "b"); err != nil {
		t.Fatalf("SET of a key still on the source: %v", err)
	}
	if c.ShardOf(0, old) != src.Addr {
		t.Fatalf("the map moved the slot during the migration")
	}
}

// A shard's primary fails over (it is stopped; its replica is promoted):
// the client asks for the map again, dials the promoted replica, and the
// node's incarnation changes to one that says Promoted.
func TestRedisClusterFailover(t *testing.T) {
	cl := redistest.StartCluster(t, redistest.ClusterOptions{Replicas: 1, NodeTimeout: time.Second})
	c := clusterClient(t, cl, Config{Incarnations: true, ReconnectMax: 200 * time.Millisecond})
	b := c.NewBatch()
	key := "failover:1"
	if err := clusterSet(c, b, key, "a"); err != nil {
		t.Fatal(err)
	}
	before := c.Incarnation(0)
	k, _ := cl.Shard(c.ShardOf(0, key))
	cl.Primaries[k].Stop()
	replica := cl.Replicas[k][0].Addr
	deadline := time.Now().Add(30 * time.Second)
	for c.ShardOf(0, key) != replica || clusterSet(c, b, key, "b") != nil {
		if time.Now().After(deadline) {
			t.Fatalf("the client did not follow the failover: shard %s, SET %v", c.ShardOf(0, key), clusterSet(c, b, key, "b"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	after := c.Incarnation(0)
	if after == nil || !after.Known || after.Same(before) || !after.Promoted {
		t.Fatalf("incarnation before %+v after %+v", before, after)
	}
}

// Bad seeds: a clear error naming every member asked, never a hang, and
// never the password.
func TestClusterBadSeeds(t *testing.T) {
	s := redistest.Start(t, redistest.Options{Password: "hunter2"})
	c, err := New(Config{Addrs: []string{nodeaddr.ClusterScheme + "://:hunter2@" + s.Addr + "?seed=127.0.0.1:1"}, DialTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = c.NodeErr(0)
	if err == nil || !errors.Is(err, ErrCluster) || !strings.Contains(err.Error(), "cluster support disabled") ||
		!strings.Contains(err.Error(), "127.0.0.1:1") || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("NodeErr: %v", err)
	}
}

// SlotTag gives a tag for every slot, the same in every process, and
// Anchor the highest slot of the key's shard.
func TestSlotTagAndAnchor(t *testing.T) {
	start := time.Now()
	for s := 0; s < ClusterSlots; s++ {
		tag := SlotTag(s)
		if tag == "" || KeySlot("{"+tag+"}") != s || KeySlot("x{"+tag+"}y") != s {
			t.Fatalf("slot %d: tag %q hashes to %d", s, tag, KeySlot("{"+tag+"}"))
		}
	}
	t.Logf("every slot's tag in %v; slot 0: %q, slot 16383: %q", time.Since(start), SlotTag(0), SlotTag(ClusterSlots-1))
	if SlotTag(-1) != "" || SlotTag(ClusterSlots) != "" {
		t.Fatal("a tag for a slot out of range")
	}
	_, err := buildMap([]slotRange{{lo: 0, hi: 5460, addr: "a:1"}, {lo: 5461, hi: 10922, addr: "b:1"}, {lo: 10923, hi: 16383, addr: "c:1"}, {lo: 100, hi: 100, addr: "x"}}, nil)
	if err == nil {
		t.Fatal("a slot given twice was accepted")
	}
	m, err := buildMap([]slotRange{{lo: 0, hi: 5460, addr: "a:1"}, {lo: 5461, hi: 10922, addr: "b:1"}, {lo: 10923, hi: 16383, addr: "c:1"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range []uint16{5460, 10922, 16383} {
		if m.anchor[k] != want {
			t.Fatalf("shard %d (%s): anchor %d, want %d", k, m.addrs[k], m.anchor[k], want)
		}
	}
}
