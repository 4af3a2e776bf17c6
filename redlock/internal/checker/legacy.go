package checker

import (
	"context"
	"math/rand/v2"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redmux/redmux/resp"
)

// legacyScript rewrites a fencing counter (a sorted set) into the string
// form redmux wrote before issue 47, "N:tag" ("N" for the member ""),
// with its top member and score: the counter as a client of that version
// would have left it. Its other members, all at or below the top, go,
// as that version kept one number. Where two members tie at the top it
// writes "N": the number is kept, and no member's tie vanishes into
// another's tag, which an acquisition that raised to that number between
// its ZADD and its read would take for its own raise alone (a rewrite
// the checker makes while clients run; an earlier version's client could
// not write a sorted set's key at all: docs/FENCING.md, "Raise first").
const legacyScript = `local r = redis.call("zrevrange",KEYS[1],0,1,"withscores")
if #r == 0 then
    return 0
end
redis.call("del",KEYS[1])
if r[1] == "" or r[4] == r[2] then
    redis.call("set",KEYS[1],r[2])
else
    redis.call("set",KEYS[1],r[2] .. ":" .. r[1])
end
return 1`

// legacyCounters is Config.LegacyEvery's fault: until ctx ends, every
// period it picks a resource at random and rewrites its counter on every
// node, one after the other, into the string form, as a client of an
// earlier version would have left the resource; the clients must convert
// each, number kept, before they count it (docs/FENCING.md, upgrading
// from the string counter). It counts the rewrites into n.
func legacyCounters(ctx context.Context, cfg *Config, rng *rand.Rand, n *atomic.Int64) {
	names := resourceNames(cfg.Resources)
	cmd := make([]byte, 0, 512)
	buf := make([]byte, 4096)
	t := time.NewTicker(cfg.LegacyEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		key := names[rng.IntN(len(names))] + ":fence"
		cmd = resp.AppendCommand(cmd[:0], "EVAL", legacyScript, "1", key)
		for _, addr := range cfg.Addrs {
			if legacyDo(addr, cmd, buf) {
				n.Add(1)
			}
		}
	}
}

// legacyDo sends cmd to addr on a fresh connection and reports whether it
// answered 1 (a counter rewritten). A node down or slow is skipped.
func legacyDo(addr string, cmd, buf []byte) bool {
	if i := strings.Index(addr, "://"); i >= 0 {
		addr = addr[i+3:]
	}
	cn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return false
	}
	defer cn.Close()
	_ = cn.SetDeadline(time.Now().Add(time.Second))
	if _, err := cn.Write(cmd); err != nil {
		return false
	}
	k, err := cn.Read(buf)
	return err == nil && string(buf[:k]) == ":1\r\n"
}
