package fakeserver

import (
	"bytes"
	"errors"
	"net"
	"strconv"
	"sync/atomic"
)

// Redis Cluster mode: the nodes of a ShardedCluster each serve one range
// of the 16384 hash slots, answer CLUSTER SLOTS, KEYSLOT, MYID and INFO,
// and refuse a command whose keys are in another node's slot with MOVED
// (or in several slots with CROSSSLOT), as a cluster's primaries do. The
// slot of a key is computed here with the fake's own CRC16 (not the
// client's: the fake imports no client code). CLUSTER SHARDS is answered
// as Redis 6 does (unknown subcommand), so clients exercise their
// CLUSTER SLOTS fallback. There are no replicas and no migrations: a
// shard's failover is Node.Failover (a new replication history), its
// restart Node.Restart.

// clusterSlots is the number of hash slots.
const clusterSlots = 16384

// shardRole is a node's place in a ShardedCluster.
type shardRole struct {
	group  *shardGroup
	k      int // this node's index in group.nodes
	lo, hi int // its slots
}

// shardGroup is one sharded cluster's nodes (a node's role is set once,
// before it serves a cluster command).
type shardGroup struct{ nodes []*Node }

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
	for k, n := range cl.Nodes {
		n.shard.Store(&shardRole{group: g, k: k, lo: k * clusterSlots / shards, hi: (k+1)*clusterSlots/shards - 1})
	}
	return cl, nil
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
	if slot >= r.lo && slot <= r.hi {
		return ""
	}
	for _, o := range r.group.nodes {
		or := o.shard.Load()
		if or != nil && slot >= or.lo && slot <= or.hi {
			return "MOVED " + strconv.Itoa(slot) + " " + o.Addr()
		}
	}
	return "CLUSTERDOWN Hash slot not served"
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
		c.rc.WriteArray(len(r.group.nodes))
		for _, o := range r.group.nodes {
			or := o.shard.Load()
			host, port := splitAddr(o.Addr())
			c.rc.WriteArray(3)
			c.rc.WriteInt(or.lo)
			c.rc.WriteInt(or.hi)
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
