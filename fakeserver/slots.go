package fakeserver

import (
	"bytes"
	"errors"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Redis Cluster mode: the nodes of a ShardedCluster each serve one range
// of the 16384 hash slots, answer CLUSTER SLOTS, KEYSLOT, MYID and INFO,
// and refuse a command whose keys are in another node's slot with MOVED
// (or in several slots with CROSSSLOT), as a cluster's primaries do. The
// slot of a key is computed here with the fake's own CRC16 (not the
// client's: the fake imports no client code). CLUSTER SHARDS is answered
// as Redis 6 does (unknown subcommand), so clients exercise their
// CLUSTER SLOTS fallback. A slot moves between shards with its keys at
// once (MoveSlot; no ASK); there are no replicas: a shard's failover is
// Node.Failover (a new replication history), its restart Node.Restart.

// clusterSlots is the number of hash slots.
const clusterSlots = 16384

// shardRole is a node's place in a ShardedCluster.
type shardRole struct {
	group *shardGroup
	k     int // this node's index in group.nodes
}

// shardGroup is one sharded cluster: its nodes and which serves each
// slot. The table is replaced, never changed, by a migration (MoveSlot),
// which holds both nodes' mu while it moves the keys and swaps it; a
// command checks it under its node's mu, so it runs wholly before or
// wholly after a migration.
type shardGroup struct {
	nodes []*Node
	owner atomic.Pointer[[clusterSlots]uint8]
	migMu sync.Mutex // one migration at a time
	// movedAt: when each slot last moved (under migMu; nil until one has)
	movedAt map[int]time.Time
}

// movedWithin reports whether slot moved less than d ago.
func (g *shardGroup) movedWithin(slot int, d time.Duration) bool {
	g.migMu.Lock()
	defer g.migMu.Unlock()
	at, ok := g.movedAt[slot]
	return ok && time.Since(at) < d
}

// StartShardedCluster starts shards nodes (cfg as StartCluster's) as one
// Redis Cluster: node k serves the k-th equal range of the slots. The
// returned Cluster's Nodes are the shards; give a client any of their
// addresses as seeds (redis-cluster://).
func StartShardedCluster(shards int, cfg Config) (*Cluster, error) {
	if shards <= 0 || shards > 64 {
		return nil, errors.New("fakeserver: a sharded cluster has 1 to 64 shards")
	}
	cl, err := StartCluster(shards, cfg)
	if err != nil {
		return nil, err
	}
	g := &shardGroup{nodes: cl.Nodes}
	var owner [clusterSlots]uint8
	for k, n := range cl.Nodes {
		for s := k * clusterSlots / shards; s < (k+1)*clusterSlots/shards; s++ {
			owner[s] = uint8(k)
		}
		n.shard.Store(&shardRole{group: g, k: k})
	}
	g.owner.Store(&owner)
	return cl, nil
}

// MoveSlot migrates slot, keys and all, to node to of the sharded cluster
// that node from serves it in, as CLUSTER SETSLOT MIGRATING/IMPORTING,
// MIGRATE and SETSLOT NODE do, but at once: both nodes' keyspaces are
// locked while the slot's keys move (each with its remaining TTL on the
// target's clock) and the slot table changes, so no command sees the slot
// half-moved (no ASK). It returns how many keys moved. Nodes of a
// cluster made by StartShardedCluster only; a node that is down refuses.
func MoveSlot(slot int, to *Node) (int, error) {
	r := to.shard.Load()
	if r == nil || slot < 0 || slot >= clusterSlots {
		return 0, errors.New("fakeserver: MoveSlot: not a sharded cluster's node, or a bad slot")
	}
	g := r.group
	g.migMu.Lock()
	defer g.migMu.Unlock()
	from := g.nodes[g.owner.Load()[slot]]
	if from == to {
		return 0, nil
	}
	if from.IsDown() || to.IsDown() {
		return 0, errors.New("fakeserver: MoveSlot: a node is down")
	}
	a, b := from, to
	if r.k < from.shard.Load().k {
		a, b = to, from
	}
	a.mu.Lock()
	b.mu.Lock()
	defer a.mu.Unlock()
	defer b.mu.Unlock()
	fnow, tnow := from.nowLocked()/1e6, to.nowLocked()/1e6
	moved := 0
	for key, e := range from.dbs[0] {
		if keyHashSlot([]byte(key)) != slot {
			continue
		}
		if e.exp != 0 {
			if e.exp < fnow {
				continue // expired: dropped, as MIGRATE does
			}
			e.exp = tnow + (e.exp - fnow)
		}
		from.remove(0, key)
		to.put(0, key, e)
		moved++
	}
	owner := *g.owner.Load()
	owner[slot] = uint8(r.k)
	g.owner.Store(&owner)
	if g.movedAt == nil {
		g.movedAt = map[int]time.Time{}
	}
	g.movedAt[slot] = time.Now()
	return moved, nil
}

// keyHashSlot is key's hash slot: CRC16/XMODEM of the key or of its hash
// tag (between the first '{' and the next '}', when not empty).
func keyHashSlot(key []byte) int {
	if i := bytes.IndexByte(key, '{'); i >= 0 {
		if j := bytes.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for _, b := range key {
		crc ^= uint16(b) << 8
		for k := 0; k < 8; k++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % clusterSlots
}

// commandKeys returns a command's keys: per the table's first/last/step,
// or EVAL's and EVALSHA's numkeys keys. ok is false for a malformed
// numkeys (the command reports it itself).
func commandKeys(def *cmdDef, args [][]byte) (keys [][]byte, ok bool) {
	if def.name == "eval" || def.name == "evalsha" {
		nk, err := strconv.Atoi(string(args[2]))
		if err != nil || nk < 0 || 3+nk > len(args) {
			return nil, false
		}
		return args[3 : 3+nk], true
	}
	if def.first <= 0 {
		return nil, true
	}
	last := def.last
	if last < 0 {
		last = len(args) + last
	}
	for i := def.first; i <= last && i < len(args); i += max(def.step, 1) {
		keys = append(keys, args[i])
	}
	return keys, true
}

// slotRefusal returns the error a cluster node answers instead of running
// a command whose keys it does not serve, or "".
func (n *Node) slotRefusal(def *cmdDef, args [][]byte) string {
	r := n.shard.Load()
	if r == nil {
		return ""
	}
	keys, ok := commandKeys(def, args)
	if !ok || len(keys) == 0 {
		return ""
	}
	slot := keyHashSlot(keys[0])
	for _, k := range keys[1:] {
		if keyHashSlot(k) != slot {
			return "CROSSSLOT Keys in request don't hash to the same slot"
		}
	}
	k := int(r.group.owner.Load()[slot])
	if k == r.k {
		return ""
	}
	return "MOVED " + strconv.Itoa(slot) + " " + r.group.nodes[k].Addr()
}

// execSlotRefusal is slotRefusal for EXEC over its queued commands, as
// Redis checks a transaction as one request: CROSSSLOT if their keys span
// slots, MOVED if this node does not serve their slot (now: a migration may
// have moved it since they were queued), or "". Callers hold n.mu.
func (n *Node) execSlotRefusal(q []queuedCmd) string {
	r := n.shard.Load()
	if r == nil {
		return ""
	}
	slot := -1
	for _, qc := range q {
		keys, _ := commandKeys(&commandTable[qc.idx], qc.args)
		for _, k := range keys {
			s := keyHashSlot(k)
			if slot >= 0 && s != slot {
				return "CROSSSLOT Keys in request don't hash to the same slot"
			}
			slot = s
		}
	}
	if slot < 0 {
		return ""
	}
	if k := int(r.group.owner.Load()[slot]); k != r.k {
		return "MOVED " + strconv.Itoa(slot) + " " + r.group.nodes[k].Addr()
	}
	return ""
}

// ranges returns the group's slot ranges in order: [lo, hi, node index].
func (g *shardGroup) ranges() [][3]int {
	owner := g.owner.Load()
	var out [][3]int
	for s := 0; s < clusterSlots; s++ {
		if n := len(out); n > 0 && out[n-1][1] == s-1 && out[n-1][2] == int(owner[s]) {
			out[n-1][1] = s
			continue
		}
		out = append(out, [3]int{s, s, int(owner[s])})
	}
	return out
}

// cmdCluster serves CLUSTER SLOTS, KEYSLOT, MYID and INFO on a cluster
// node; anything else (SHARDS included, as before Redis 7) is an unknown
// subcommand, and every subcommand on a node that is not in cluster mode
// is refused as Redis refuses it.
func cmdCluster(n *Node, c cmdCtx) {
	r := n.shard.Load()
	if r == nil {
		c.rc.WriteError("ERR This instance has cluster support disabled")
		return
	}
	sub := string(bytes.ToLower(c.args[1]))
	switch {
	case sub == "slots" && len(c.args) == 2:
		rs := r.group.ranges()
		c.rc.WriteArray(len(rs))
		for _, x := range rs {
			o := r.group.nodes[x[2]]
			host, port := splitAddr(o.Addr())
			c.rc.WriteArray(3)
			c.rc.WriteInt(x[0])
			c.rc.WriteInt(x[1])
			c.rc.WriteArray(3)
			c.rc.WriteBulkString(host)
			c.rc.WriteInt(port)
			c.rc.WriteBulkString(o.clusterID())
		}
	case sub == "keyslot" && len(c.args) == 3:
		c.rc.WriteInt(keyHashSlot(c.args[2]))
	case sub == "myid" && len(c.args) == 2:
		c.rc.WriteBulkString(n.clusterID())
	case sub == "info" && len(c.args) == 2:
		c.rc.WriteBulkString("cluster_enabled:1\r\ncluster_state:ok\r\ncluster_slots_assigned:16384\r\ncluster_known_nodes:" +
			strconv.Itoa(len(r.group.nodes)) + "\r\ncluster_size:" + strconv.Itoa(len(r.group.nodes)) + "\r\n")
	default:
		c.rc.WriteError("ERR unknown subcommand or wrong number of arguments for '" + string(c.args[1]) + "'. Try CLUSTER HELP.")
	}
}

// mode is HELLO's mode and INFO's redis_mode: "cluster" for a sharded
// cluster's node, else "standalone".
func (n *Node) mode() string {
	if n.shard.Load() != nil {
		return "cluster"
	}
	return "standalone"
}

// cmdClusterConn is READONLY, READWRITE and ASKING: +OK on a cluster node
// (a fake cluster has no replicas to read from, and no slot is ever
// importing: MoveSlot moves a slot at once, so ASKING changes nothing),
// refused as Redis refuses them elsewhere.
func cmdClusterConn(n *Node, c cmdCtx) {
	if n.shard.Load() == nil {
		c.err("ERR This instance has cluster support disabled")
		return
	}
	c.ok()
}

// cmdRole answers ROLE as a primary with no replicas does: a fake node is
// always a primary (a failover is a new replication history, not a role).
func cmdRole(n *Node, c cmdCtx) {
	c.rc.WriteArray(3)
	c.rc.WriteBulkString("master")
	c.rc.WriteInt(0)
	c.rc.WriteArray(0)
}

// clusterID is the node's 40-character cluster id (stable for its life:
// derived from its address).
func (n *Node) clusterID() string {
	var id [40]byte
	h := uint64(14695981039346656037)
	for _, b := range []byte(n.Addr()) {
		h ^= uint64(b)
		h *= 1099511628211
	}
	const hex = "0123456789abcdef"
	for i := range id {
		h ^= h >> 29
		h *= 0xbf58476d1ce4e5b9
		id[i] = hex[h>>60]
	}
	return string(id[:])
}

// splitAddr splits host:port (the fake's own addresses are well formed).
func splitAddr(a string) (string, int) {
	h, ps, _ := net.SplitHostPort(a)
	p, _ := strconv.Atoi(ps)
	return h, p
}

// shardField is the Node field holding its cluster role (nil: standalone).
type shardField = atomic.Pointer[shardRole]
