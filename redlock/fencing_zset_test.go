package redlock_test

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redmux/redmux/redlock"
)

// Issue 47's counters are sorted sets raised by a native transaction
// (docs/FENCING.md, "The sorted-set counter"). These tests hold its three
// new rules: a strict node's raise touches only its incarnation's member
// (XX), a raise counts as the guess written only where ZADD said so (CH),
// and counters of the string form are converted keeping their number,
// never counted before.

// guessAt: the proposal a context's attempts make (withLowGuess's hook).
type guessAt struct{}

// A failed-over node's counter is an older copy under the old primary's
// tag. A client whose clock lies between that copy and the last token
// sends its acquisition there; were it to raise that counter to its
// proposal regardless of the read (a single lock's ZADD without XX, or
// the script's raise of a stale counter for several resources), the
// stale counter would come back current with the unvouched proposal on
// top, and a later grant on {2,3,4} (nodes 3 and 4 never saw the last
// token, nodes 0 and 1 do not answer) could take a token below it.
func TestFencingStaleNotRetagged(t *testing.T) {
	withLowGuess(t)
	for _, multi := range []bool{false, true} {
		cl := startCluster(t, 5)
		addrs := cl.Addrs()
		obs := &incEvents{}
		c := newClient(t, addrs, redlock.WithTTL(time.Second), redlock.WithObserver(obs))
		warm(t, c)
		try := func(ctx context.Context) (redlock.Lock, error) {
			if multi {
				return c.TryAcquireMulti(ctx, []string{"rt", "rx"}, redlock.WithFencing())
			}
			return c.TryAcquire(ctx, "rt", redlock.WithFencing())
		}
		t1 := grantOn(t, context.Background(), c, addrs, "rt", 0, 1, 2)
		for _, i := range []int{3, 4} { // as if they had been unreachable then
			rawDo(t, addrs[i], "DEL", "rt:fence")
		}
		old := cl.Nodes[2].ReplID()
		require.NoError(t, cl.Nodes[2].Failover(0, 0))
		setCounter(t, addrs[2], "rt:fence", t1-100, old) // the replica's older copy
		eventually(t, 10*time.Second, func() bool {
			return len(c.Quarantined()) == 0 && len(obs.causes(2)) > 0
		}, "the failover was not judged")
		// the client between: refused (nodes 0, 1 and 3 held), its
		// acquisition ran on node 2 all the same
		setForeign(t, addrs, "rt", 0, 1, 3)
		_, err := try(context.WithValue(context.Background(), guessAt{}, t1-50))
		require.Error(t, err)

		rawDo(t, addrs[3], "DEL", "rt")
		// nodes 0 and 1 (which hold the last token) do not answer
		cl.Nodes[0].Down()
		cl.Nodes[1].Down()
		// the grant must fail for want of current counters, or take a
		// token above t1; an attempt that failed otherwise (a node slow
		// on a loaded machine) is made again
		var err2 error
		for try2 := 0; try2 < 5; try2++ {
			var l redlock.Lock
			l, err2 = try(context.WithValue(context.Background(), lowGuess{}, true))
			if err2 == nil {
				require.Greater(t, l.Token(), t1, "multi %v: a stale counter re-tagged by a proposal vouched for a token below the last", multi)
				require.NoError(t, l.Release(context.Background()))
				break
			}
			if errors.Is(err2, redlock.ErrFencingUnknown) {
				break
			}
		}
		cl.Nodes[0].Up()
		cl.Nodes[1].Up()
		if err2 != nil {
			require.ErrorIs(t, err2, redlock.ErrFencingUnknown, "multi %v", multi)
		}
	}
}

// Nodes 0 and 1 failed over before the resource was ever fenced: their
// counters are empty, and their transactions' ZADD XX writes nothing
// there. A grant on {0,1,2} must not take the proposal as its token (the
// fast path) on their word: the write-back puts it there. Otherwise a
// later grant on {0,1,3} (node 3 never saw it) reads nothing anywhere and
// takes a token below it.
func TestFencingStrictEmptyNoWitness(t *testing.T) {
	withLowGuess(t)
	cl := startCluster(t, 5)
	addrs := cl.Addrs()
	obs := &incEvents{}
	c := newClient(t, addrs, redlock.WithTTL(time.Second), redlock.WithObserver(obs))
	warm(t, c)
	for _, i := range []int{0, 1} {
		require.NoError(t, cl.Nodes[i].Failover(0, 0))
	}
	eventually(t, 10*time.Second, func() bool {
		return len(c.Quarantined()) == 0 && len(obs.causes(0)) > 0 && len(obs.causes(1)) > 0
	}, "the failovers were not judged")
	t1 := grantOn(t, context.Background(), c, addrs, "se", 0, 1, 2)
	for _, i := range []int{3, 4} { // as if they had been unreachable then
		rawDo(t, addrs[i], "DEL", "se:fence")
	}
	setForeign(t, addrs, "se", 2, 4)
	l, err := c.TryAcquire(context.WithValue(context.Background(), lowGuess{}, true), "se", redlock.WithFencing())
	require.NoError(t, err)
	require.Greater(t, l.Token(), t1, "an empty counter a ZADD XX did not write counted as the token's witness")
	require.NoError(t, l.Release(context.Background()))
}

// Counters of the string form (written by redmux before issue 47, an hour
// ahead of the clock here) are converted, number kept, before any grant
// counts on them: the token is above them. A grant meeting them
// (WRONGTYPE) counts them as failed, and converts them. A client of the
// string form then fails loudly on them (WRONGTYPE), never silently. On
// the fake and on real redis-servers.
func TestFencingMigratesStringCounters(t *testing.T) {
	cl := startCluster(t, 5)
	tags := make([]string, 5)
	for i := range tags {
		tags[i] = cl.Nodes[i].ReplID()
	}
	migratesStringCounters(t, cl.Addrs(), tags)
}

func TestRealFencingMigratesStringCounters(t *testing.T) {
	_, addrs := startRealFive(t)
	tags := make([]string, 5)
	for i, a := range addrs {
		tags[i] = strings.TrimSpace(infoField(string(rawDo(t, a, "INFO", "replication").Data), "master_replid"))
		require.Len(t, tags[i], 40)
	}
	migratesStringCounters(t, addrs, tags)
}

func migratesStringCounters(t *testing.T, addrs, tags []string) {
	c := newClient(t, addrs, redlock.WithFencing(), redlock.WithTrustNodesAtStart())
	warm(t, c)
	ahead := uint64(time.Now().Add(time.Hour).UnixMicro())
	for i, a := range addrs {
		rawDo(t, a, "SET", "mg:fence", strconv.FormatUint(ahead, 10)+":"+tags[i])
	}
	rawDo(t, addrs[4], "SET", "mg:fence", strconv.FormatUint(ahead+7, 10)) // untagged
	l, err := c.Acquire(context.Background(), "mg")
	require.NoError(t, err)
	// node 4's answer may come after the quorum's: the token is above
	// the counters of the nodes whose answers decided it
	require.Greater(t, l.Token(), ahead, "a converted counter lost its number, or one of the string form was counted")
	require.NoError(t, l.Release(context.Background()))
	// a node outside the quorum is converted by the write-back, which
	// may still be on its way
	eventually(t, 5*time.Second, func() bool {
		for i, a := range addrs {
			v, _ := fenceCounter(t, a, "mg:fence")
			if string(rawDo(t, a, "TYPE", "mg:fence").Data) != "zset" || v < map[bool]uint64{false: ahead, true: ahead + 7}[i == 4] {
				return false
			}
		}
		return true
	}, "the counters were not all converted with their numbers")
	r := rawDo(t, addrs[0], "EVAL", stringFormAcquire, "2", "mg", "mg:fence", "old-client", "30000", "1", tags[0])
	require.True(t, r.IsError() && strings.Contains(r.String(), "WRONGTYPE"), "an old client's script on a converted counter: %s", r.String())
}

// stringFormAcquire is the fenced acquire script of the string form, as
// redmux ran it before issue 47's sorted sets (a client not upgraded).
const stringFormAcquire = `local k = #KEYS / 2
local tag = ARGV[4]
local strict = string.sub(tag,1,1) == "="
if strict then
    tag = string.sub(tag,2)
end
if k == 1 then
    local v
    local g = 0
    if redis.call("set",KEYS[1],ARGV[1],"nx","px",ARGV[2]) then
        g = 1
        local w = ARGV[3]
        if tag ~= "" then
            w = w .. ":" .. tag
        end
        v = redis.call("set",KEYS[2],w,"get")
    else
        v = redis.call("get",KEYS[2])
    end
    local n = 0
    local stale = 0
    if v then
        local t
        n, t = string.match(v, "^(%d+):(%x+)$")
        if not n then
            n = string.match(v, "^(%d+)$")
        end
        n = tonumber(n)
        if not n or n >= 9007199254740992 then
            n = 0
            stale = 1
        elseif strict and t ~= tag then
            stale = 1
        end
    end
    if g == 0 then
        return {0,n,stale}
    end
    if stale == 0 and n < tonumber(ARGV[3]) then
        return -1 - n
    end
    if v then
        redis.call("set",KEYS[2],v)
    else
        redis.call("del",KEYS[2])
    end
    return {1,n,stale}
end
local c = 0
local stale = 0
for i = k + 1, 2 * k do
    local v = redis.call("get",KEYS[i])
    if v then
        local n, t = string.match(v, "^(%d+):(%x+)$")
        if not n then
            n = string.match(v, "^(%d+)$")
        end
        n = tonumber(n)
        if not n or n >= 9007199254740992 then
            stale = 1
        else
            if strict and t ~= tag then
                stale = 1
            end
            if n > c then
                c = n
            end
        end
    end
end
for i = 1, k do
    if redis.call("exists",KEYS[i]) == 1 then
        return {0,c,stale}
    end
end
for i = 1, k do
    redis.call("set",KEYS[i],ARGV[1],"px",ARGV[2])
end
if stale == 0 and c < tonumber(ARGV[3]) then
    local w = ARGV[3]
    if tag ~= "" then
        w = w .. ":" .. tag
    end
    for i = k + 1, 2 * k do
        redis.call("set",KEYS[i],w)
    end
end
return {1,c,stale}`

// A single fenced lock's SET, counter read and raise run in one atomic
// step on each node (docs/FENCING.md, "Three commands without MULTI"):
// the proof needs the raise to happen while the lock's key is on the
// node, whatever ends the key (a node clock step, an eviction), and only
// the step guarantees that. Held on a real server's wire (MONITOR): per
// attempt MULTI, then SET, ZREVRANGE, ZADD and EXEC with no other
// command between them, from one connection.
func TestRealFencedStepAtomic(t *testing.T) {
	_, addrs := startRealFive(t)
	mon, err := net.DialTimeout("tcp", addrs[0], 2*time.Second)
	require.NoError(t, err)
	defer mon.Close()
	_, err = mon.Write([]byte("MONITOR\r\n"))
	require.NoError(t, err)
	rd := bufio.NewReader(mon)
	require.NoError(t, mon.SetReadDeadline(time.Now().Add(20*time.Second)))
	line, err := rd.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "+OK\r\n", line)

	c := newClient(t, addrs, redlock.WithFencing(), redlock.WithTrustNodesAtStart())
	warm(t, c)
	const attempts = 5
	for i := 0; i < attempts; i++ {
		l, err := c.Acquire(context.Background(), "stp")
		require.NoError(t, err)
		require.NoError(t, l.Release(context.Background()))
	}
	// every line from the SET of an attempt on: the step is the four
	// lines after it, then the next attempt
	var steps [][]string
	var cur []string
	for len(steps) < attempts {
		line, err := rd.ReadString('\n')
		require.NoError(t, err, "MONITOR: %d steps seen, then %v", len(steps), cur)
		// +1764512345.123456 [0 127.0.0.1:40000] "SET" "stp" ...
		_, rest, ok := strings.Cut(line, " [")
		if !ok {
			continue
		}
		client, args, ok := strings.Cut(rest, "] ")
		if !ok {
			continue
		}
		f := strings.Fields(args)
		name := strings.ToUpper(strings.Trim(f[0], `"`))
		if cur == nil && !(name == "SET" && len(f) > 1 && f[1] == `"stp"`) {
			continue
		}
		cur = append(cur, client+" "+name)
		if len(cur) == 4 {
			steps, cur = append(steps, cur), nil
		}
	}
	for i, st := range steps {
		from := strings.TrimSuffix(st[0], " SET")
		require.Equal(t, []string{from + " SET", from + " ZREVRANGE", from + " ZADD", from + " EXEC"}, st,
			"attempt %d: the fenced step's commands not run together in one transaction", i)
	}
}
