package mux

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redmux/redmux/resp"
)

// This file holds a Redis Cluster node's slot map as the cluster tells
// it: asked (CLUSTER SHARDS, else CLUSTER SLOTS), parsed, checked and given
// stable shard indexes. Routing by it is cluster.go's.

// fetchSlots asks the members (the one that answered the old map first,
// then the seeds and the primaries of the old map) for the slot map:
// CLUSTER SHARDS, else CLUSTER SLOTS (before Redis 7). The first member
// that answers a map wins; a map is checked (every slot once; at most
// MaxClusterShards primaries) and given stable shard indexes against old.
func (c *Client) fetchSlots(i int, old *slotMap) (*slotMap, error) {
	ns := &c.cfg.nodes[i]
	members := slices.Clone(ns.cluster.seeds)
	if old != nil {
		for _, a := range old.addrs {
			if a != "" && !slices.Contains(members, a) {
				members = append(members, a)
			}
		}
		// the member that answered last first: a seed that accepts and
		// never answers then costs one DialTimeout, not one per fetch
		if k := slices.Index(members, old.from); k > 0 {
			members = append(append([]string{old.from}, members[:k]...), members[k+1:]...)
		}
	}
	var tries []string
	for _, a := range members {
		if c.closed.Load() {
			return nil, ErrClosed
		}
		ranges, err := c.askSlotMap(a, ns, time.Now().Add(c.cfg.DialTimeout))
		if err == nil {
			var m *slotMap
			if m, err = buildMap(ranges, old); err == nil {
				m.from = a
				return m, nil
			}
		}
		tries = append(tries, a+": "+cleanText(err.Error(), maxQuoted, ns.secrets()))
	}
	return nil, fmt.Errorf("%w: no slot map from %d member(s): %s", ErrCluster, len(members), strings.Join(tries, "; "))
}

// slotRange is slots [lo, hi] served by the primary at addr.
type slotRange struct {
	lo, hi int
	addr   string
}

// askSlotMap asks the member at addr for its slot map.
func (c *Client) askSlotMap(addr string, ns *nodeSpec, deadline time.Time) ([]slotRange, error) {
	sc, err := c.plainDial(addr, ns.username, ns.password, deadline)
	if err != nil {
		return nil, err
	}
	defer sc.close()
	host, _, _ := net.SplitHostPort(addr)
	if err := sc.send(deadline, "CLUSTER", "SHARDS"); err != nil {
		return nil, err
	}
	rep, err := sc.reply(deadline)
	if err != nil {
		return nil, err
	}
	if !rep.IsError() {
		return parseShards(rep, host)
	}
	if !bytes.Contains(bytes.ToLower(rep.Data), []byte("unknown")) {
		return nil, errors.New("CLUSTER SHARDS refused: " + string(rep.Data))
	}
	if err := sc.send(deadline, "CLUSTER", "SLOTS"); err != nil {
		return nil, err
	}
	if rep, err = sc.reply(deadline); err != nil {
		return nil, err
	}
	if rep.IsError() {
		return nil, errors.New("CLUSTER SLOTS refused: " + string(rep.Data) + " (is it a cluster member?)")
	}
	return parseSlots(rep, host)
}

// parseSlots reads a CLUSTER SLOTS reply: [[lo, hi, [ip, port, id, ...],
// replicas...], ...]. An empty ip is the asked member's host.
func parseSlots(rep resp.Reply, host string) ([]slotRange, error) {
	if rep.Type != resp.TypeArray {
		return nil, errors.New("CLUSTER SLOTS: unexpected reply " + rep.String())
	}
	var out []slotRange
	it := rep.Iter()
	var e resp.Reply
	for it.Next(&e) {
		if e.Type != resp.TypeArray || e.Len() < 3 {
			return nil, errors.New("CLUSTER SLOTS: unexpected entry " + e.String())
		}
		ei := e.Iter()
		var lo, hi, p resp.Reply
		ei.Next(&lo)
		ei.Next(&hi)
		ei.Next(&p)
		l, ok1 := lo.Int()
		h, ok2 := hi.Int()
		if !ok1 || !ok2 || p.Type != resp.TypeArray || p.Len() < 2 {
			return nil, errors.New("CLUSTER SLOTS: unexpected entry " + e.String())
		}
		pi := p.Iter()
		var ip, port resp.Reply
		pi.Next(&ip)
		pi.Next(&port)
		pn, ok := port.Int()
		if !ok {
			return nil, errors.New("CLUSTER SLOTS: unexpected entry " + e.String())
		}
		a, err := endpoint(string(ip.Data), pn, host)
		if err != nil {
			return nil, err
		}
		out = append(out, slotRange{lo: int(l), hi: int(h), addr: a})
	}
	return out, nil
}

// parseShards reads a CLUSTER SHARDS reply: a list of shards, each a map
// (RESP3) or flat key-value list (RESP2) with "slots" ([lo, hi, ...]) and
// "nodes" (maps with ip, endpoint, port, role, health). A shard's primary
// is its node whose role is master and whose health is not "fail".
func parseShards(rep resp.Reply, host string) ([]slotRange, error) {
	if rep.Type != resp.TypeArray {
		return nil, errors.New("CLUSTER SHARDS: unexpected reply " + rep.String())
	}
	var out []slotRange
	it := rep.Iter()
	var sh resp.Reply
	for it.Next(&sh) {
		var slots []int64
		addr := ""
		err := pairs(sh, func(k string, v resp.Reply) error {
			switch k {
			case "slots":
				vi := v.Iter()
				var x resp.Reply
				for vi.Next(&x) {
					n, ok := x.Int()
					if !ok {
						return errors.New("CLUSTER SHARDS: slots " + v.String())
					}
					slots = append(slots, n)
				}
			case "nodes":
				vi := v.Iter()
				var nd resp.Reply
				for vi.Next(&nd) {
					a, err := shardPrimary(nd, host)
					if err != nil {
						return err
					}
					if a != "" {
						addr = a
					}
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if len(slots)%2 != 0 {
			return nil, errors.New("CLUSTER SHARDS: odd slot list " + sh.String())
		}
		if len(slots) == 0 {
			continue // a shard with no slots (a new, empty primary)
		}
		if addr == "" {
			return nil, errors.New("CLUSTER SHARDS: a shard serving slots " + strconv.FormatInt(slots[0], 10) + "- has no healthy primary")
		}
		for k := 0; k < len(slots); k += 2 {
			out = append(out, slotRange{lo: int(slots[k]), hi: int(slots[k+1]), addr: addr})
		}
	}
	return out, nil
}

// shardPrimary returns the address of a CLUSTER SHARDS node entry when it
// is a healthy primary, else "".
func shardPrimary(nd resp.Reply, host string) (string, error) {
	var ip, ep, role, health string
	var port int64
	err := pairs(nd, func(k string, v resp.Reply) error {
		switch k {
		case "ip":
			ip = string(v.Data)
		case "endpoint":
			ep = string(v.Data)
		case "port":
			port, _ = v.Int()
		case "role":
			role = string(v.Data)
		case "health":
			health = string(v.Data)
		}
		return nil
	})
	if err != nil || role != "master" || health == "fail" {
		return "", err
	}
	if ep == "" || ep == "?" {
		ep = ip
	}
	return endpoint(ep, port, host)
}

// pairs calls f with each key and value of a map or flat key-value array.
func pairs(r resp.Reply, f func(k string, v resp.Reply) error) error {
	if r.Type != resp.TypeArray && r.Type != resp.TypeMap {
		return errors.New("unexpected entry " + r.String())
	}
	it := r.Iter()
	var k, v resp.Reply
	for it.Next(&k) {
		if !it.Next(&v) {
			return errors.New("unexpected entry " + r.String())
		}
		if err := f(string(k.Data), v); err != nil {
			return err
		}
	}
	return nil
}

// endpoint is host:port of a member as a slot map names it; an empty or
// "?" host is the asked member's.
func endpoint(ip string, port int64, host string) (string, error) {
	if ip == "" || ip == "?" {
		ip = host
	}
	if port <= 0 || port > 65535 || strings.ContainsAny(ip, "/?#@ ,") {
		return "", fmt.Errorf("slot map names a bad address %q port %d", ip, port)
	}
	return net.JoinHostPort(ip, strconv.FormatInt(port, 10)), nil
}

// buildMap checks ranges (each slot at most once, at most
// MaxClusterShards primaries) and makes a slot map in which a primary old
// names too keeps its shard index (and so its connections); a new one
// takes the lowest index free in the new map.
func buildMap(ranges []slotRange, old *slotMap) (*slotMap, error) {
	if len(ranges) == 0 {
		return nil, errors.New("the slot map is empty (no slot is assigned: was the cluster created?)")
	}
	m := &slotMap{}
	for s := range m.owner {
		m.owner[s] = noShard
	}
	idx := map[string]int{}
	var fresh []string
	for _, r := range ranges {
		if r.lo < 0 || r.hi >= ClusterSlots || r.lo > r.hi {
			return nil, fmt.Errorf("the slot map has a bad range %d-%d", r.lo, r.hi)
		}
		if _, ok := idx[r.addr]; ok || slices.Contains(fresh, r.addr) {
			continue
		}
		if k := oldIndex(old, r.addr); k >= 0 {
			idx[r.addr] = k
			m.addrs[k] = r.addr
		} else {
			fresh = append(fresh, r.addr)
		}
	}
	if len(idx)+len(fresh) > MaxClusterShards {
		return nil, fmt.Errorf("the slot map has %d primaries, more than MaxClusterShards (%d)", len(idx)+len(fresh), MaxClusterShards)
	}
	k := 0
	for _, a := range fresh {
		for m.addrs[k] != "" {
			k++
		}
		idx[a] = k
		m.addrs[k] = a
	}
	for _, r := range ranges {
		k := idx[r.addr]
		for s := r.lo; s <= r.hi; s++ {
			if m.owner[s] != noShard && int(m.owner[s]) != k {
				return nil, fmt.Errorf("the slot map gives slot %d to two primaries", s)
			}
			m.owner[s] = uint8(k)
			m.anchor[k] = uint16(max(int(m.anchor[k]), s))
		}
	}
	return m, nil
}

// oldIndex is addr's shard index in old, or -1.
func oldIndex(old *slotMap, addr string) int {
	if old == nil {
		return -1
	}
	for k, a := range old.addrs {
		if a == addr {
			return k
		}
	}
	return -1
}

// SlotMoved returns when this client applied the newest slot map of
// cluster node i that gave slot another shard (a resharding moved it, or
// it was uncovered or covered again), or the zero time if none did since
// New (and for any other node). The time is stored before the map that
// routes by it, so a call whose command went out on that map and reads
// SlotMoved after its reply sees it. A slot's keys then hold what the
// shard that served it before had: redlock does not count a grant on a
// slot that moved less than its quarantine ago (docs/OPERATIONS.md, Redis
// Cluster rule 6).
func (c *Client) SlotMoved(i, slot int) time.Time {
	if !c.IsCluster(i) || slot < 0 || slot >= ClusterSlots {
		return time.Time{}
	}
	t := c.nodes[i].cluster.moved[slot].Load()
	if t == 0 {
		return time.Time{}
	}
	return monoBase.Add(time.Duration(t))
}
