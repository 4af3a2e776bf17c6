package mux

import "sync"

// This file holds a Redis Cluster shard's anchor: one slot of the shard,
// the same for every client with the same slot map, whose hash tag lets a
// caller address the shard's own keys (redlock's data-set marker,
// docs/OPERATIONS.md rule 4) in the same pipeline as a command on any key
// the shard serves.

// Anchor returns, for cluster node i, the anchor slot of the shard that
// serves key's slot in the newest slot map: the highest slot that shard
// serves. Keys with its tag (SlotTag) live on the same primary as key, so
// one shard's own keys (redlock's data-set marker, docs/OPERATIONS.md rule
// 4) can be read in the same pipeline as a command on key. Every client
// with the same slot map finds the same anchor. -1 for any other node,
// before a first map, or for a slot no shard serves.
func (c *Client) Anchor(i int, key string) int {
	if !c.IsCluster(i) {
		return -1
	}
	m := c.nodes[i].cluster.m.Load()
	if m == nil {
		return -1
	}
	k := m.owner[keySlot(key)]
	if k == noShard {
		return -1
	}
	return int(m.anchor[k])
}

// Anchors returns the anchor slots (Anchor) of every shard of cluster
// node i's newest slot map, nil for any other node.
func (c *Client) Anchors(i int) []int {
	if !c.IsCluster(i) {
		return nil
	}
	m := c.nodes[i].cluster.m.Load()
	if m == nil {
		return nil
	}
	var out []int
	for k, a := range m.addrs {
		if a != "" {
			out = append(out, int(m.anchor[k]))
		}
	}
	return out
}

// SlotTag returns a hash tag whose slot is slot (0..ClusterSlots-1): the
// first string of the sequence "0", "1", ... "z", "00", ... (base 36)
// that hashes there, the same in every process. "" for a slot out of range.
func SlotTag(slot int) string {
	if slot < 0 || slot >= ClusterSlots {
		return ""
	}
	slotTagsOnce.Do(func() {
		found := 0
		for n := 0; found < ClusterSlots; n++ {
			s := base36(n)
			if k := keySlot(s); slotTags[k] == "" {
				slotTags[k] = s
				found++
			}
		}
	})
	return slotTags[slot]
}

var (
	slotTagsOnce sync.Once
	slotTags     [ClusterSlots]string
)

// base36 is n in the sequence "0".."z", "00".."zz", ...: every string of
// one length before the next length.
func base36(n int) string {
	const digits = "0123456789abcdefghijklmnopqrstuvwxyz"
	width, span := 1, 36
	for n >= span {
		n -= span
		width++
		span *= 36
	}
	b := make([]byte, width)
	for i := width - 1; i >= 0; i-- {
		b[i] = digits[n%36]
		n /= 36
	}
	return string(b)
}
