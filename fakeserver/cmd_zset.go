package fakeserver

import "strings"

// Sorted-set commands (bodies run with n.mu held, see cmd_keys.go): ZADD
// with every flag, ZINCRBY, ZSCORE, ZCARD, ZREM, and ZRANGE / ZREVRANGE by
// index, as Redis 7.0 answers them in RESP2 and RESP3.

// getZset looks key up as a sorted set; it replies WRONGTYPE (ok=false)
// for another kind. z is nil when the key does not exist.
func getZset(n *Node, c cmdCtx) (z *zsetVal, ok bool) {
	e, exists := n.lookup(c.fc.db, string(c.args[1]), n.nowLocked())
	if !exists {
		return nil, true
	}
	if e.kind != kindZset {
		c.err(wrongType)
		return nil, false
	}
	return e.zset, true
}

// double writes a score: a bulk string in RESP2 (scripts included), a
// RESP3 double otherwise, as Redis's addReplyDouble.
func (c cmdCtx) double(f float64) {
	if c.fc.proto == 3 {
		c.rc.WriteRaw([]byte("," + formatScore(f) + "\r\n"))
		return
	}
	c.rc.WriteBulkString(formatScore(f))
}

const errNotFloat = "ERR value is not a valid float"

// zaddFlags are ZADD's options.
type zaddFlags struct{ nx, xx, gt, lt, ch, incr bool }

func cmdZAdd(n *Node, c cmdCtx) {
	var f zaddFlags
	j := 2
	for ; j < len(c.args); j++ {
		a := c.args[j]
		switch {
		case eqFold(a, "nx"):
			f.nx = true
		case eqFold(a, "xx"):
			f.xx = true
		case eqFold(a, "gt"):
			f.gt = true
		case eqFold(a, "lt"):
			f.lt = true
		case eqFold(a, "ch"):
			f.ch = true
		case eqFold(a, "incr"):
			f.incr = true
		default:
			goto elements
		}
	}
elements:
	zaddElements(n, c, f, c.args[j:])
}

// cmdZIncrBy is ZADD key INCR increment member.
func cmdZIncrBy(n *Node, c cmdCtx) {
	zaddElements(n, c, zaddFlags{incr: true}, c.args[2:])
}

// zaddElements is the body of Redis's zaddGenericCommand: the options'
// checks in its order, every score parsed before anything is written, then
// each pair added under the flags.
func zaddElements(n *Node, c cmdCtx, f zaddFlags, els [][]byte) {
	switch {
	case len(els) == 0 || len(els)%2 != 0:
		c.syntaxErr()
		return
	case f.nx && f.xx:
		c.err("ERR XX and NX options at the same time are not compatible")
		return
	case (f.gt && f.nx) || (f.lt && f.nx) || (f.gt && f.lt):
		c.err("ERR GT, LT, and/or NX options at the same time are not compatible")
		return
	case f.incr && len(els) > 2:
		c.err("ERR INCR option supports a single increment-element pair")
		return
	}
	scores := make([]float64, len(els)/2)
	for i := range scores {
		s, ok := parseScore(els[2*i])
		if !ok {
			c.err(errNotFloat)
			return
		}
		scores[i] = s
	}
	z, ok := getZset(n, c)
	if !ok {
		return
	}
	key := string(c.args[1])
	added, updated, processed := 0, 0, 0
	var last float64
	if z == nil && !f.xx {
		z = newZset()
		n.put(c.fc.db, key, entry{kind: kindZset, zset: z})
	}
	if z != nil {
		for i, s := range scores {
			m := string(els[2*i+1])
			cur, has := z.score(m)
			switch {
			case has && f.nx:
				continue
			case has:
				if f.incr {
					s += cur
					if s != s { // NaN: inf + -inf
						c.err("ERR resulting score is not a number (NaN)")
						return
					}
				}
				if (f.lt && s >= cur) || (f.gt && s <= cur) {
					continue
				}
				last = s
				processed++
				if s != cur {
					z.set(m, s)
					updated++
				}
			case !f.xx:
				z.set(m, s)
				last = s
				added++
				processed++
			}
		}
		if added+updated > 0 {
			n.touch(c.fc.db, key)
		}
	}
	if f.incr {
		if processed > 0 {
			c.double(last)
		} else {
			c.null()
		}
		return
	}
	if f.ch {
		added += updated
	}
	c.rc.WriteInt(added)
}

func cmdZScore(n *Node, c cmdCtx) {
	z, ok := getZset(n, c)
	if !ok {
		return
	}
	if z != nil {
		if s, has := z.score(string(c.args[2])); has {
			c.double(s)
			return
		}
	}
	c.null()
}

func cmdZCard(n *Node, c cmdCtx) {
	z, ok := getZset(n, c)
	if !ok {
		return
	}
	if z == nil {
		c.rc.WriteInt(0)
		return
	}
	c.rc.WriteInt(z.len())
}

func cmdZRem(n *Node, c cmdCtx) {
	z, ok := getZset(n, c)
	if !ok {
		return
	}
	cnt := 0
	if z != nil {
		for _, m := range c.args[2:] {
			if z.del(string(m)) {
				cnt++
			}
		}
		if z.len() == 0 {
			n.remove(c.fc.db, string(c.args[1]))
		} else if cnt > 0 {
			n.touch(c.fc.db, string(c.args[1]))
		}
	}
	c.rc.WriteInt(cnt)
}

func cmdZRange(n *Node, c cmdCtx)    { zrange(n, c, false, true) }
func cmdZRevRange(n *Node, c cmdCtx) { zrange(n, c, true, false) }

// zrange is ZRANGE key start stop [REV] [WITHSCORES] and ZREVRANGE key
// start stop [WITHSCORES]: ranges by index, as Redis's zrangeGenericCommand
// parses and answers them. ZRANGE's BYSCORE and BYLEX are not served (a
// clear error says so).
func zrange(n *Node, c cmdCtx, rev, full bool) {
	withScores, limit := false, false
	for j := 4; j < len(c.args); j++ {
		a := c.args[j]
		switch {
		case eqFold(a, "withscores"):
			withScores = true
		case eqFold(a, "limit") && len(c.args)-j-1 >= 2:
			if _, ok := parseInt(c.args[j+1]); !ok {
				c.notInt()
				return
			}
			if _, ok := parseInt(c.args[j+2]); !ok {
				c.notInt()
				return
			}
			limit = true
			j += 2
		case full && eqFold(a, "rev"):
			rev = true
		case full && (eqFold(a, "byscore") || eqFold(a, "bylex")):
			c.err("ERR fake server: ZRANGE " + strings.ToUpper(string(a)) + " is not supported (ranges by index only)")
			return
		default:
			c.syntaxErr()
			return
		}
	}
	if limit {
		c.err("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX")
		return
	}
	start, ok1 := parseInt(c.args[2])
	stop, ok2 := parseInt(c.args[3])
	if !ok1 || !ok2 {
		c.notInt()
		return
	}
	z, ok := getZset(n, c)
	if !ok {
		return
	}
	if z == nil {
		c.rc.WriteArray(0)
		return
	}
	l := int64(z.len())
	if start < 0 {
		start += l
	}
	if stop < 0 {
		stop += l
	}
	start = max(start, 0)
	if start > stop || start >= l {
		c.rc.WriteArray(0)
		return
	}
	stop = min(stop, l-1)
	cnt := int(stop - start + 1)
	if withScores && c.fc.proto != 3 {
		c.rc.WriteArray(2 * cnt)
	} else {
		c.rc.WriteArray(cnt)
	}
	for i := int(start); i <= int(stop); i++ {
		it := z.items[i]
		if rev {
			it = z.items[len(z.items)-1-i]
		}
		if withScores && c.fc.proto == 3 {
			c.rc.WriteArray(2)
		}
		c.rc.WriteBulkString(it.member)
		if withScores {
			c.double(it.score)
		}
	}
}
