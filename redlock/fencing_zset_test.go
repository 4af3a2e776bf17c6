package redlock_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redmux/redmux/fakeserver"
	"github.com/redmux/redmux/redlock"
	"github.com/redmux/redmux/redlock/scripts"
)

// Issue 47's counters are sorted sets raised by native commands
// (docs/FENCING.md, "The sorted-set counter"). These tests hold its
// rules: a strict node's raise touches only its incarnation's member
// (XX), a raise counts as the guess written only where ZADD said so (CH),
// counters of the string form are converted keeping their number, never
// counted before, and the counter is raised before the SET and read after
// it (docs/FENCING.md, "Raise first").

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
		aboveOrUnknown(t, cl, func() (redlock.Lock, error) {
			return try(context.WithValue(context.Background(), lowGuess{}, true))
		}, t1, fmt.Sprintf("multi %v: a stale counter re-tagged by a proposal vouched for a token below the last", multi))
	}
}

// aboveOrUnknown takes nodes 0 and 1 (which hold the last token t1) down
// and makes the grant try: it must fail for want of current counters
// (ErrFencingUnknown), or take a token above t1. An attempt that failed
// otherwise (a node slow on a loaded machine) is made again, up to 5.
func aboveOrUnknown(t *testing.T, cl *fakeserver.Cluster, try func() (redlock.Lock, error), t1 uint64, what string) {
	t.Helper()
	cl.Nodes[0].Down()
	cl.Nodes[1].Down()
	defer cl.Nodes[0].Up()
	defer cl.Nodes[1].Up()
	var err error
	for k := 0; k < 5; k++ {
		var l redlock.Lock
		if l, err = try(); err == nil {
			require.Greater(t, l.Token(), t1, what)
			require.NoError(t, l.Release(context.Background()))
			return
		}
		if errors.Is(err, redlock.ErrFencingUnknown) {
			return
		}
	}
	require.ErrorIs(t, err, redlock.ErrFencingUnknown, what)
}

// Nodes 0 and 1 failed over before the resource was ever fenced: their
// counters are empty, and the acquisitions' ZADD XX writes nothing
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

// A fenced single lock raises its counter before its SET on each node,
// and reads it after, on the same connection (docs/FENCING.md, "Raise
// first"): a raise after the SET could land after a later grant's read
// where the key ends early between them (a clock step, an eviction). The
// window is two pipelined commands wide, which no checker schedule opens,
// so the order itself is held here, on the wire of a real server
// (MONITOR): ZADD, SET, ZREVRANGE, from one connection, for every attempt.
func TestRealFencedRaiseFirst(t *testing.T) {
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
		l, err := c.Acquire(context.Background(), "ord")
		require.NoError(t, err)
		require.NoError(t, l.Release(context.Background()))
	}
	// each attempt's commands on the lock's key and its counter, by the
	// connection that sent them
	var seq []string
	from := ""
	for len(seq) < 3*attempts {
		line, err := rd.ReadString('\n')
		require.NoError(t, err, "MONITOR: %d of the fenced commands seen: %v", len(seq), seq)
		// +1764512345.123456 [0 127.0.0.1:40000] "SET" "ord" ...
		_, rest, ok := strings.Cut(line, " [")
		if !ok {
			continue
		}
		client, args, ok := strings.Cut(rest, "] ")
		if !ok {
			continue
		}
		f := strings.Fields(args)
		if len(f) < 2 || f[1] != `"ord"` && f[1] != `"ord:fence"` {
			continue
		}
		name := strings.ToUpper(strings.Trim(f[0], `"`))
		if name != "SET" && name != "ZREVRANGE" && name != "ZADD" {
			continue // the release, the write-back
		}
		if len(seq)%3 == 0 {
			from = client
		}
		require.Equal(t, from, client, "an attempt's fenced commands came on two connections")
		seq = append(seq, name)
	}
	for i := 0; i < len(seq); i += 3 {
		require.Equal(t, []string{"ZADD", "SET", "ZREVRANGE"}, seq[i:i+3], "attempt %d: the counter not raised before the SET and read after it", i/3)
	}
}

// A raise counts as the guess written (the fast path) only where it is
// the one raise at the proposal and everything was below it before
// (docs/FENCING.md, "Raise first"): a member of another tag tying the
// proposal (here "", as a counter of the string form "N" converts to;
// it sorts below the tag, so the tag's member reads on top) or the tag's
// own member already there (another acquisition's raise, a write-back;
// ZADD answers CH 0) means the counter was not below it, and the token
// must be above it.
func TestFencingTieIsNoWitness(t *testing.T) {
	withLowGuess(t)
	cl := startCluster(t, 5)
	addrs := cl.Addrs()
	c := newClient(t, addrs, redlock.WithTTL(time.Second))
	warm(t, c)
	g := uint64(time.Now().UnixMicro())
	ctx := context.WithValue(context.Background(), guessAt{}, g)
	for _, k := range []struct{ key, what string }{{"tie", "another member at the proposal"}, {"own", "the tag's member already at the proposal"}} {
		for n, a := range addrs {
			tag := ""
			if k.key == "own" {
				tag = cl.Nodes[n].ReplID()
			}
			setCounter(t, a, k.key+":fence", g, tag)
		}
		var l redlock.Lock
		var err error
		for try := 0; try < 5; try++ { // a node slow on a loaded machine fails an attempt
			if l, err = c.TryAcquire(ctx, k.key, redlock.WithFencing()); err == nil {
				break
			}
		}
		require.NoError(t, err, k.what)
		require.Greater(t, l.Token(), g, "%s: the raise counted as the only one at the proposal", k.what)
		require.NoError(t, l.Release(context.Background()))
	}
}

// The write-back moves the tag's member one above the highest where any
// member, the tag's own included, is at or above the token, and to the
// token otherwise (docs/FENCING.md, "Raise first", attack 1): left at a
// number another acquisition has just raised it to, the member would read
// as that acquisition's raise. On the fake and on a real redis-server.
func TestFenceWriteBackMovesEqualTop(t *testing.T) {
	fenceWriteBackMovesEqualTop(t, startCluster(t, 1).Addrs()[0])
}

func TestRealFenceWriteBackMovesEqualTop(t *testing.T) {
	_, addrs := startRealFive(t)
	fenceWriteBackMovesEqualTop(t, addrs[0])
}

func fenceWriteBackMovesEqualTop(t *testing.T, addr string) {
	for _, c := range []struct {
		tag         string
		at, token   uint64
		other       uint64 // another member's score (0: none)
		want        uint64
		wantTopName string
	}{
		{"ab12", 100, 100, 0, 101, "ab12"}, // the tag at the token: one above
		{"ab12", 100, 90, 0, 101, "ab12"},  // above it
		{"ab12", 100, 150, 0, 150, "ab12"}, // below it: the token
		{"ab12", 100, 100, 120, 121, "ab12"},
		{"ab12", 100, 130, 120, 130, "ab12"},
	} {
		rawDo(t, addr, "SET", "wb", "v1")
		setCounter(t, addr, "wb:fence", c.at, c.tag)
		if c.other > 0 {
			rawDo(t, addr, "ZADD", "wb:fence", strconv.FormatUint(c.other, 10), "cd34")
		}
		r := rawDo(t, addr, "EVAL", scripts.FenceWriteBack.Text, "2", "wb", "wb:fence", "v1", strconv.FormatUint(c.token, 10), c.tag)
		v, ok := r.Int()
		require.True(t, ok && v == 1, "%+v: %s", c, r.String())
		got, name := fenceCounter(t, addr, "wb:fence")
		require.Equal(t, c.want, got, "%+v", c)
		require.Equal(t, c.wantTopName, name, "%+v", c)
	}
	rawDo(t, addr, "DEL", "wb", "wb:fence")
}

// A failed-over node's counters stay stale for every client writing under
// its promoted history: one that first meets the node after the failover
// (INFO says promoted) and one whose connections to it were dropped and
// made again after it judged the failover (a new, equal incarnation).
// Read as exact, the node would take the client's ZADD without XX, which
// creates the history's member with an unvouched proposal, and the read
// after the raise would count it: with nodes 0 and 1 (which hold the last
// token) silent, a grant on {2,3,4} whose proposal lies between the
// replica's older copy and the last token would take it as its token.
func TestFencingStrictKept(t *testing.T) {
	withLowGuess(t)
	for _, how := range []string{"first sight", "redial"} {
		cl := startCluster(t, 5)
		addrs := cl.Addrs()
		obs := &incEvents{}
		c := newClient(t, addrs, redlock.WithTTL(time.Second), redlock.WithObserver(obs))
		warm(t, c)
		t1 := grantOn(t, context.Background(), c, addrs, "sk", 0, 1, 2)
		for _, i := range []int{3, 4} { // as if they had been unreachable then
			rawDo(t, addrs[i], "DEL", "sk:fence")
		}
		old := cl.Nodes[2].ReplID()
		require.NoError(t, cl.Nodes[2].Failover(0, 0))
		setCounter(t, addrs[2], "sk:fence", t1-100, old) // the replica's older copy
		if how == "first sight" {
			obs = &incEvents{}
			c = newClient(t, addrs, redlock.WithTTL(time.Second), redlock.WithObserver(obs))
		}
		eventually(t, 10*time.Second, func() bool {
			return len(c.Quarantined()) == 0 && len(obs.causes(2)) > 0
		}, "%s: the failover was not judged", how)
		if how == "redial" {
			cl.Nodes[2].Down()
			cl.Nodes[2].Up()
		}
		// node 2's connection is (made again and) judged by plain grants
		eventually(t, 10*time.Second, func() bool {
			l, err := c.TryAcquire(context.Background(), "sk-warm")
			if err != nil {
				return false
			}
			_ = l.Release(context.Background())
			return true
		}, "%s: no plain grant", how)
		aboveOrUnknown(t, cl, func() (redlock.Lock, error) {
			return c.TryAcquire(context.WithValue(context.Background(), guessAt{}, t1-50), "sk", redlock.WithFencing())
		}, t1, how+": a stale counter read exact vouched for a token below the last")
	}
}

// A node that refuses INFO has no incarnation the client knows: its
// failover to a replica with an older copy of a counter cannot be told,
// so its counter vouches for no fenced grant (docs/FENCING.md, "Raise
// first", attack 4b). With three of five such nodes a fenced acquisition
// fails loudly, while a plain one is granted.
func TestFencingNeedsIncarnation(t *testing.T) {
	cl := startCluster(t, 5)
	for _, i := range []int{0, 1, 2} {
		cl.Nodes[i].RefuseInfo(true)
	}
	c := newClient(t, cl.Addrs(), redlock.WithTrustNodesAtStart())
	warm(t, c)
	l, err := c.TryAcquire(context.Background(), "ni")
	require.NoError(t, err, "a plain lock")
	require.NoError(t, l.Release(context.Background()))
	for try := 0; try < 3; try++ {
		_, err = c.TryAcquire(context.Background(), "ni", redlock.WithFencing())
		require.Error(t, err, "a fenced grant counted nodes whose incarnation is unknown")
		if errors.Is(err, redlock.ErrFencingUnknown) {
			break
		}
	}
	require.ErrorIs(t, err, redlock.ErrFencingUnknown)
	require.Contains(t, err.Error(), "incarnation is unknown")
}
