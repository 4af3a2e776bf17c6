package mux

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redmux/redmux/resp"
)

// This file holds what a Redis Cluster node (a redis-cluster:// URL,
// internal/nodeaddr/cluster.go) adds: the slot map, asked of the members in the
// background (New and the node's supervisor, never a caller); one set of
// connections per shard primary, Config.Conns each, made at New for
// MaxClusterShards shards and dialled only while a shard holds slots; a
// batch's commands go to the primary of its key's slot (Batch.SetKey).
// A MOVED or ASK reply is followed by resending the command (which did
// nothing) to the primary named (redirect); TRYAGAIN, CLUSTERDOWN and a
// redirect that cannot be followed are delivered as the error replies they
// are; each makes the supervisor ask for the map again, and a broken shard
// connection does too.
// The node's incarnation is all its shards' together (see
// clusterIncarnation).

// MaxClusterShards is the most primaries a Redis Cluster node may have:
// its connections are made (not dialled) at New.
const MaxClusterShards = 16

// ClusterSlots is the number of hash slots of a Redis Cluster.
const ClusterSlots = 16384

const noShard = 0xFF

// ErrCluster is wrapped by the cause of a Redis Cluster node that could
// not be set up: no member answered a slot map, the map had more than
// MaxClusterShards primaries, or a shard's primary could not be dialled.
var ErrCluster = errors.New("mux: redis cluster")

var (
	errResharded = errors.New("the slot map no longer names this connection's primary: connection replaced")
	errNoKey     = errors.New("the batch has no key (Batch.SetKey): a Redis Cluster node routes each batch by its key's slot")
)

// slotMap is one slot map of a cluster node: each slot's shard, each
// shard's primary. Shard indexes are stable across maps while a primary
// keeps its address, so its connections stay.
type slotMap struct {
	owner [ClusterSlots]uint8
	addrs [MaxClusterShards]string // host:port; "" for an unused index
	from  string                   // the member that answered
	// anchor is each shard's anchor slot (Anchor): the highest slot it
	// serves
	anchor [MaxClusterShards]uint16
}

// clusterState is a cluster node's routing state.
type clusterState struct {
	m       atomic.Pointer[slotMap]
	refresh atomic.Bool   // ask the members again (set by replies and broken connections)
	last    atomic.Int64  // mono time of the last fetch
	wait    time.Duration // backoff after failed fetches (the supervisor's)

	mu   sync.Mutex
	incs [MaxClusterShards]*Incarnation // each shard's, by its newest set-up

	// moved is, per slot, the mono time of the newest map that changed
	// its shard (0: none since New): stored before that map (SlotMoved)
	moved [ClusterSlots]atomic.Int64

	dial [MaxClusterShards]shardDial // each shard's redials (cluster_dial.go)
}

// KeySlot returns key's Redis Cluster hash slot: CRC16 (XMODEM) of the key,
// or of its hash tag (the text between the first '{' and the next '}',
// when not empty), modulo 16384.
func KeySlot(key string) int { return int(keySlot(key)) }

func keySlot(key string) uint16 {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc = crc<<8 ^ crcTable[byte(crc>>8)^key[k]]
	}
	return crc & (ClusterSlots - 1)
}

var crcTable = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for b := 0; b < 8; b++ {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

// IsCluster reports whether node i is a Redis Cluster node
// (redis-cluster://).
func (c *Client) IsCluster(i int) bool {
	return i >= 0 && i < c.n && c.nodes[i].cluster != nil
}

// Shards returns the primaries (host:port) of cluster node i's newest slot
// map, in shard order, and nil for any other node or before a first map.
func (c *Client) Shards(i int) []string {
	if !c.IsCluster(i) {
		return nil
	}
	m := c.nodes[i].cluster.m.Load()
	if m == nil {
		return nil
	}
	var out []string
	for _, a := range m.addrs {
		if a != "" {
			out = append(out, a)
		}
	}
	return out
}

// ShardOf returns the primary (host:port) that cluster node i's newest
// slot map names for key's slot, or "".
func (c *Client) ShardOf(i int, key string) string {
	if !c.IsCluster(i) {
		return ""
	}
	m := c.nodes[i].cluster.m.Load()
	if m == nil {
		return ""
	}
	if k := m.owner[keySlot(key)]; k != noShard {
		return m.addrs[k]
	}
	return ""
}

// clusterConn picks cluster node i's connection for b: the one of its
// key's shard. It returns the node's error when the batch has no key, no
// map is known yet, or no primary serves the slot.
func (c *Client) clusterConn(i int, b *Batch) (*pconn, error) {
	if !b.keyed {
		return nil, c.nodeErr(i, ErrNotSent, errNoKey)
	}
	cs := c.nodes[i].cluster
	m := cs.m.Load()
	if m == nil {
		return nil, c.nodes[i].downErr.Load()
	}
	k := m.owner[b.slot]
	if k == noShard {
		c.askSlots(i)
		return nil, c.nodeErr(i, ErrNodeDown, fmt.Errorf("%w: slot %d is served by no primary in the slot map from %s (the cluster's slots are not all covered)", ErrCluster, b.slot, m.from))
	}
	return c.conns[c.base[i]+int(k)*c.cfg.Conns+int(b.route%uint32(c.cfg.Conns))], nil
}

// askSlots makes cluster node i's supervisor ask for the slot map again.
func (c *Client) askSlots(i int) {
	c.nodes[i].cluster.refresh.Store(true)
	select {
	case c.nodes[i].wake <- struct{}{}:
	default:
	}
}

// clusterRedirect reports whether the error frame f (a reply of a cluster
// node) says the slot map moved: MOVED or ASK (the slot is, or is going,
// elsewhere), TRYAGAIN (a multi-key command during a migration) or
// CLUSTERDOWN. Cold path: error replies only.
func clusterRedirect(f []byte) bool {
	for _, p := range [...]string{"-MOVED ", "-ASK ", "-TRYAGAIN", "-CLUSTERDOWN"} {
		if bytes.HasPrefix(f, []byte(p)) {
			return true
		}
	}
	return false
}

var askingCmd = resp.AppendCommand(nil, "ASKING")

// redirect follows a cluster node's MOVED or ASK reply f to node's
// command k of b: the command did nothing, so it is resent, once, on the
// connection to the primary the reply names (after ASKING for ASK, in the
// same write, so nothing comes between), when the slot map knows that
// primary and its connection is up with room in its queue (queueInternal);
// its reply is then the command's. It
// reports whether it did; else f is delivered as the error it is (the
// supervisor learns the new primary from the map it asks for). Cold path:
// error replies only; b.mu is held.
func (cn *pconn) redirect(b *Batch, k int, gen uint64, f []byte) bool {
	ask := bytes.HasPrefix(f, []byte("-ASK "))
	if !ask && !bytes.HasPrefix(f, []byte("-MOVED ")) {
		return false
	}
	// -MOVED <slot> <host:port>\r\n
	fields := strings.Fields(strings.TrimRight(string(f[1:]), "\r\n"))
	if len(fields) != 3 {
		return false
	}
	c := cn.c
	m := c.nodes[cn.node].cluster.m.Load()
	if m == nil {
		return false
	}
	target := redirectAddr(fields[2], m.addrs[cn.shard])
	shard := -1
	for s, a := range m.addrs {
		if a != "" && a == target {
			shard = s
			break
		}
	}
	if shard < 0 {
		return false
	}
	to := c.shardConns(cn.node, shard)[int(b.route%uint32(c.cfg.Conns))]
	if to == cn {
		return false // the map and the node disagree: no loop
	}
	cmd := b.cmd(cn.node, k)
	at := mono()
	one := slot{b: b, gen: gen, k: int32(k), exp: b.exp[cn.node][k], at: at}
	if !ask {
		return to.queueInternal(cmd, one)
	}
	extra := append(append([]byte(nil), askingCmd...), cmd...)
	return to.queueInternal(extra, slot{b: b, gen: gen, k: -1, exp: ExpectAny, at: at}, one)
}

// redirectAddr writes the address of a MOVED or ASK reply as the slot map
// does (endpoint): Redis writes an IPv6 host without brackets
// ("::1:7000"), and an unknown endpoint as an empty host or "?" (then it
// is the host of self, the node that answered).
func redirectAddr(a, self string) string {
	c := strings.LastIndexByte(a, ':')
	if c < 0 {
		return a
	}
	host := strings.TrimSuffix(strings.TrimPrefix(a[:c], "["), "]")
	if host == "" || host == "?" {
		if h, _, err := net.SplitHostPort(self); err == nil {
			host = h
		}
	}
	return net.JoinHostPort(host, a[c+1:])
}

// minRefresh is the least time between two slot map fetches of a node: a
// burst of MOVED replies costs one fetch.
const minRefresh = 50 * time.Millisecond

// refreshSlots fetches cluster node i's slot map when it has none or was
// asked to, and applies it: the connections of a shard whose primary
// changed (or left) are replaced. Supervisor (and New) only.
func (c *Client) refreshSlots(i int) error {
	cs := c.nodes[i].cluster
	old := cs.m.Load()
	if old != nil && !cs.refresh.Load() {
		return nil
	}
	if old != nil && mono()-cs.last.Load() < int64(max(minRefresh, cs.wait)) {
		return nil
	}
	cs.refresh.Store(false)
	cs.last.Store(mono())
	m, err := c.fetchSlots(i, old)
	if err != nil {
		cs.refresh.Store(true)
		cs.wait = min(max(2*cs.wait, c.cfg.ReconnectMin), c.cfg.ReconnectMax)
		return err
	}
	cs.wait = 0
	cs.mu.Lock()
	for k := range m.addrs {
		if old != nil && old.addrs[k] != "" && old.addrs[k] != m.addrs[k] {
			cs.incs[k] = nil
		}
	}
	cs.mu.Unlock()
	if old != nil {
		now := mono()
		for s := range m.owner {
			if m.owner[s] != old.owner[s] {
				cs.moved[s].Store(now)
			}
		}
	}
	cs.m.Store(m)
	if old != nil {
		for k := range m.addrs {
			if old.addrs[k] != "" && old.addrs[k] != m.addrs[k] {
				for _, cn := range c.shardConns(i, k) {
					cn.abort(ErrConnBroken, errResharded)
				}
			}
		}
	}
	return nil
}

// shardAddr returns the host and port of shard k's primary in cluster
// node i's slot map, for a dial.
func (c *Client) shardAddr(i, k int) (string, int, error) {
	m := c.nodes[i].cluster.m.Load()
	if m == nil || m.addrs[k] == "" {
		return "", 0, fmt.Errorf("%w: shard %d has no primary in the slot map", ErrCluster, k)
	}
	h, p, err := net.SplitHostPort(m.addrs[k])
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	return h, port, err
}

// shardConns returns cluster node i's connections to shard k.
func (c *Client) shardConns(i, k int) []*pconn {
	b := c.base[i] + k*c.cfg.Conns
	return c.conns[b : b+c.cfg.Conns]
}

// liveConns returns node i's connections that should be connected: all
// of a standalone or Sentinel node's; a cluster node's of the shards its
// slot map names.
func (c *Client) liveConns(i int) []*pconn {
	cs := c.nodes[i].cluster
	if cs == nil {
		return c.nodeConns(i)
	}
	m := cs.m.Load()
	if m == nil {
		return nil
	}
	var out []*pconn
	for k, a := range m.addrs {
		if a != "" {
			out = append(out, c.shardConns(i, k)...)
		}
	}
	return out
}

// learnShard records shard k's incarnation of cluster node i and stores
// the node's: every shard of the map that told one, together.
func (c *Client) learnShard(i, k int, inc *Incarnation) {
	cs := c.nodes[i].cluster
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.incs[k] = inc
	c.nodes[i].inc.Store(clusterIncarnation(cs.incs[:], cs.m.Load()))
}

// clusterIncarnation is a cluster node's incarnation: its shards' (those
// of m that told one) as one, so that a change of any shard is a change
// of the node. RunID and ReplID join the shards' (sorted, concatenated);
// Promoted is
// any shard's; Start is the newest shard's start (Seen the latest set-up,
// Uptime back to that start). A restart of one shard is then judged a
// restart from its start, a failover (a promoted primary) a failover;
// the whole node is quarantined, which is more than the keys of one shard
// need but never less (docs/OPERATIONS.md).
func clusterIncarnation(incs []*Incarnation, m *slotMap) *Incarnation {
	var run, repl, repl2 []string
	out := &Incarnation{Known: true, Role: "master"}
	var start time.Time
	unknown := ""
	noWatch := false // a shard set up without the flush watch
	for k, p := range incs {
		//mutant:cluster-incarnation-one-shard
		if p == nil || m == nil || m.addrs[k] == "" {
			continue
		}
		if p.Seen.After(out.Seen) {
			out.Seen = p.Seen
		}
		//mutant:cluster-unknown-oldest-seen
		if !p.Known {
			if unknown == "" {
				unknown = "shard " + m.addrs[k] + ": " + p.Err
			}
			continue
		}
		run, repl, repl2 = append(run, p.RunID), append(repl, p.ReplID), append(repl2, p.ReplID2)
		out.Promoted = out.Promoted || p.Promoted
		noWatch = noWatch || !p.WatchesFlushes
		if s := p.Start(); s.After(start) {
			start = s
		}
	}
	if unknown != "" {
		// one shard that does not tell hides the others' changes: the
		// node's is unknown, as of its newest set-up (which may be a
		// known shard's restart: redlock quarantines from then)
		return &Incarnation{Err: unknown, Seen: out.Seen}
	}
	if len(run) == 0 {
		return nil
	}
	slices.Sort(run)
	slices.Sort(repl)
	slices.Sort(repl2)
	// joined without separators: still hexadecimal, as a run_id (fencing
	// counters are tagged with it, docs/FENCING.md)
	out.RunID, out.ReplID, out.ReplID2 = strings.Join(run, ""), strings.Join(repl, ""), strings.Join(repl2, "")
	out.Uptime = out.Seen.Sub(start)
	out.WatchesFlushes = !noWatch
	return out
}
