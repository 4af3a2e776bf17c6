// Package scripts holds the exact Lua texts of the lock scripts that redlock
// runs on every node, with their SHA1 digests.
//
// The texts are part of the wire contract: fakeserver recognises a script by
// the SHA1 of its exact text and executes it natively (any other script runs
// in its Lua interpreter), so any change to a text here changes its SHA and
// must be mirrored by the fake server's native implementation (fakeserver
// tests check that every script in All is known and that the native and Lua
// runs give the same replies).
//
// This package has no dependencies beyond the standard library so that both
// the client side (redlock, mux) and the fake server can import it.
package scripts

import (
	"crypto/sha1"
	"encoding/hex"
)

// Script is a Lua script with its precomputed SHA1 (lower-case hex, as Redis
// prints it in SCRIPT LOAD replies and expects in EVALSHA).
type Script struct {
	// Name is a short identifier used in logs and errors.
	Name string
	// Text is the exact Lua source sent with EVAL and SCRIPT LOAD.
	Text string
	// SHA is the lower-case hex SHA1 of Text.
	SHA string
}

func newScript(name, text string) Script {
	sum := sha1.Sum([]byte(text))
	return Script{Name: name, Text: text, SHA: hex.EncodeToString(sum[:])}
}

// Release deletes KEYS[1] only if its value equals ARGV[1] (compare-and-delete).
// Replies 1 if the key was deleted, 0 otherwise.
var Release = newScript("release", `if redis.call("get",KEYS[1]) == ARGV[1] then
    return redis.call("del",KEYS[1])
else
    return 0
end`)

// Extend sets the TTL of KEYS[1] to ARGV[2] milliseconds only if its value
// equals ARGV[1] (compare-and-pexpire), but never shortens it: when the key
// had longer to live, its old expiry is put back (PEXPIRE of the PTTL it
// had; the clock only advances, so the expiry can only stay or grow).
// Replies 1 if the value matched, 0 otherwise.
//
// Never shortening is what makes extensions safe against delayed
// commands: an earlier Extend to a shorter TTL, held up in the network or
// a stalled server, may run on a node after a later extension succeeded;
// were it to apply, it would cut that extension's keys short while the
// holder counts on them. PEXPIRE parses ARGV[2] first, so bad input gets
// PEXPIRE's own errors. (PEXPIRE ... GT would do the same on Redis 7+;
// this runs on every version.)
//
//mutant:extend-may-shorten
var Extend = newScript("extend", `if redis.call("get",KEYS[1]) == ARGV[1] then
    local left = redis.call("pttl",KEYS[1])
    redis.call("pexpire",KEYS[1],ARGV[2])
    if left > 0 and redis.call("pttl",KEYS[1]) < left then
        redis.call("pexpire",KEYS[1],left)
    end
    return 1
else
    return 0
end`)

// All lists every script redlock uses, in the order they are loaded on a new
// connection.
var All = []Script{Release, Extend}

// The multi-resource scripts (redlock's AcquireMulti): one call per node
// covers every key of the lock, so a node grants all of them or none.
// They run in the fake server's Lua interpreter (no native version), and
// are not in All.

// AcquireMulti sets every KEYS[i] to ARGV[1] with a TTL of ARGV[2]
// milliseconds if none of them exists, else sets nothing. Replies 1 if it
// set them, 0 otherwise.
//
//mutant:multi-first-key-only
var AcquireMulti = newScript("acquire-multi", `for i = 1, #KEYS do
    if redis.call("exists",KEYS[i]) == 1 then
        return 0
    end
end
for i = 1, #KEYS do
    redis.call("set",KEYS[i],ARGV[1],"px",ARGV[2])
end
return 1`)

// ReleaseMulti deletes every KEYS[i] whose value equals ARGV[1]. Replies
// the number of keys deleted.
var ReleaseMulti = newScript("release-multi", `local n = 0
for i = 1, #KEYS do
    if redis.call("get",KEYS[i]) == ARGV[1] then
        n = n + redis.call("del",KEYS[i])
    end
end
return n`)

// ExtendMulti sets the TTL of every KEYS[i] to ARGV[2] milliseconds if all
// of them hold ARGV[1], else changes nothing; like Extend it never shortens
// a key's TTL. Replies 1 if they all held the value, 0 otherwise.
var ExtendMulti = newScript("extend-multi", `for i = 1, #KEYS do
    if redis.call("get",KEYS[i]) ~= ARGV[1] then
        return 0
    end
end
for i = 1, #KEYS do
    local left = redis.call("pttl",KEYS[i])
    redis.call("pexpire",KEYS[i],ARGV[2])
    if left > 0 and redis.call("pttl",KEYS[i]) < left then
        redis.call("pexpire",KEYS[i],left)
    end
end
return 1`)

// Multi lists the multi-resource scripts, loaded on every connection after
// All.
var Multi = []Script{AcquireMulti, ReleaseMulti, ExtendMulti}

// The fencing scripts (redlock's WithFencing; design in docs/FENCING.md).
// A resource's counter is its key + ":fence", without a TTL: a sorted set
// whose members are the tags of the incarnations that wrote it (the
// replication history's id, master_replid, or the server process's run_id
// where the node told none; "" where the client did not know the node's
// incarnation) and whose scores are their counters; the node's counter is
// the top score, as ZREVRANGE 0 0 WITHSCORES reads it (issue 47: ZADD GT
// raises it natively, so a single lock's acquisition on a node that is
// not a Redis Cluster's needs no script, see redlock's addFenced). A
// script names its lock keys first, then their counters, in the same
// order (KEYS[1..k] and KEYS[k+1..2k]); its last argument is the tag the
// client learned for this node ("": unknown, tags not checked). They run
// in the fake server's Lua interpreter.
//
// A counter is *stale* when its top score is not an integer below 2^53
// (not written by redlock), or, where the client asks for it (a last
// argument starting with "=", then the tag), when its top member is not
// the node's tag: written by another incarnation, here one that came
// from a failover, whose replicated counters may be behind (restarts keep
// counters when the nodes persist every write, which fencing requires). A
// stale counter can only raise a token, never vouch for one; the
// write-back re-seeds it.
//
// Every script first converts a counter of the string form that redmux
// wrote before issue 47 ("N:tag" or "N") into the member tag (or "")
// scored N, atomically and keeping the number; a string that is no such
// counter becomes the member "" scored 2^53, stale until a write-back
// removes it. FenceMigrate does only that, for a node whose transaction
// met such a counter (WRONGTYPE).
//
//mutant:fence-migrate-drops-number
const fenceMigrate = `local function migrate(key)
    if redis.call("type",key)["ok"] ~= "string" then
        return 0
    end
    local v = redis.call("get",key)
    local n, t = string.match(v, "^(%d+):(%x+)$")
    if not n then
        n = string.match(v, "^(%d+)$")
    end
    n = tonumber(n)
    redis.call("del",key)
    if not n or n >= 9007199254740992 then
        redis.call("zadd",key,9007199254740992,"")
    else
        redis.call("zadd",key,n,t or "")
    end
    return 1
end
`

// fenceTop is the counter's reading: the top score (0 for none), and
// whether it is stale; a counter of the string form (ZREVRANGE's
// WRONGTYPE) is converted first.
const fenceTop = `local function top(key, strict, tag)
    local r = redis.pcall("zrevrange",key,0,0,"withscores")
    if r["err"] then
        migrate(key)
        r = redis.call("zrevrange",key,0,0,"withscores")
    end
    if #r == 0 then
        return 0, false
    end
    local n = tonumber(r[2])
    if not n or n < 0 or n >= 9007199254740992 or n ~= math.floor(n) then
        return 0, true
    end
    return n, strict and r[1] ~= tag
end
`

// AcquireFenced acquires the lock keys KEYS[1..k] with value ARGV[1] and
// TTL ARGV[2] ms (SET NX PX for one key; for several, all or none, as
// AcquireMulti) and reads their counters KEYS[k+1..2k] in the same step.
// If it set the keys and no counter is stale and every one is below the
// guess ARGV[3], it raises every counter to the guess under the tag of
// ARGV[4] (after its "=", if any). It replies {1, counter, stale} if it
// set the keys, {0, counter, stale} otherwise, where counter is the
// highest of the counters as they were before the script (0 where a node
// has none: never written, or lost with the node's data, docs/FENCING.md;
// one stale by its tag counts, one that is no counter does not) and stale
// is 1 if any counter is stale. The client's token is the guess if every
// granted node that is not stale read less, else 1 + the highest counter
// read, written back with FenceWriteBack.
//
// redlock runs it for locks of several resources and on Redis Cluster
// nodes; a single lock elsewhere is one transaction of native commands
// (MULTI, SET NX PX, ZREVRANGE, ZADD [XX] GT CH, EXEC; redlock's
// addFenced), whose raise needs no script.
//
//mutant:fence-multi-first-counter,fence-raise-stale
var AcquireFenced = newScript("acquire-fenced", fenceMigrate+fenceTop+`local k = #KEYS / 2
local tag = ARGV[4]
local strict = string.sub(tag,1,1) == "="
if strict then
    tag = string.sub(tag,2)
end
local c = 0
local stale = 0
for i = k + 1, 2 * k do
    local n, s = top(KEYS[i], strict, tag)
    if s then
        stale = 1
    end
    if n > c then
        c = n
    end
end
if k == 1 then
    if not redis.call("set",KEYS[1],ARGV[1],"nx","px",ARGV[2]) then
        return {0,c,stale}
    end
else
    for i = 1, k do
        if redis.call("exists",KEYS[i]) == 1 then
            return {0,c,stale}
        end
    end
    for i = 1, k do
        redis.call("set",KEYS[i],ARGV[1],"px",ARGV[2])
    end
end
if stale == 0 and c < tonumber(ARGV[3]) then
    for i = k + 1, 2 * k do
        redis.call("zadd",KEYS[i],"gt",ARGV[3],tag)
    end
end
return {1,c,stale}`)

// FenceWriteBack raises every counter KEYS[k+1..2k] to the token ARGV[2]
// under the tag ARGV[3] (after its "=", if any), only while every lock key
// KEYS[1..k] holds the holder's value ARGV[1]: replies 1 if they all
// matched (the counters are now >= the token, and their top member is
// the tag), 0 otherwise. Members whose scores are no counters are removed
// (they vouched for nothing); where any member, the tag's own included,
// holds a score at or above the token, the tag's member goes one above
// the highest: a stale counter re-tagged with a number no lower than it
// had, and never a member left at a number another acquisition has just
// raised it to, which that acquisition would read as its own raise
// (docs/FENCING.md, "Raise first", attack 1). No counter is ever
// lowered. The guard keeps a holder whose lock is gone from raising
// counters where a newer holder is.
//
//mutant:fence-late-unguarded,fence-multi-first-counter,fence-writeback-absorbs
var FenceWriteBack = newScript("fence-write-back", fenceMigrate+`local k = #KEYS / 2
for i = 1, k do
    if redis.call("get",KEYS[i]) ~= ARGV[1] then
        return 0
    end
end
local tag = ARGV[3]
if string.sub(tag,1,1) == "=" then
    tag = string.sub(tag,2)
end
local t = tonumber(ARGV[2])
for i = k + 1, 2 * k do
    migrate(KEYS[i])
    local all = redis.call("zrange",KEYS[i],0,-1,"withscores")
    local hi = -1
    for j = 1, #all, 2 do
        local n = tonumber(all[j+1])
        if not n or n < 0 or n >= 9007199254740992 or n ~= math.floor(n) then
            redis.call("zrem",KEYS[i],all[j])
        else
            hi = n
        end
    end
    if hi < t then
        redis.call("zadd",KEYS[i],"gt",t,tag)
    else
        redis.call("zadd",KEYS[i],"gt",math.min(hi + 1, 9007199254740991),tag)
    end
end
return 1`)

// FenceMigrate converts every counter KEYS[1..k] of the string form to a
// sorted set (see above); a counter already of the new form, or absent,
// is left as it is. Replies the number converted.
var FenceMigrate = newScript("fence-migrate", fenceMigrate+`local c = 0
for i = 1, #KEYS do
    c = c + migrate(KEYS[i])
end
return c`)

// Fenced lists the fencing scripts, loaded on every connection after
// Multi.
var Fenced = []Script{AcquireFenced, FenceWriteBack, FenceMigrate}

// The data-set marker (docs/OPERATIONS.md, rules 4 and 5): three keys each
// node's data set carries, kept by redmux clients. MarkerKey names the
// data set (a random id, no TTL); YoungKey, created beside it when the
// data set may have lost keys, lives for the quarantine period, so while
// it exists the data set is younger than that by the node's own clock;
// TTLKey records the largest lock TTL (milliseconds) any client of the
// nodes declared. On a Redis Cluster node each shard has its own three,
// with a hash tag of a slot the shard serves (MarkerKeys).
const (
	MarkerKey = "redmux:node:dataset"
	YoungKey  = "redmux:node:young"
	TTLKey    = "redmux:node:ttl"
	// MarkerPrefix begins every marker key; lock resources may not.
	MarkerPrefix = "redmux:node:"
)

// MarkerKeys returns the three marker keys, with the hash tag {tag} when
// tag is not empty (a Redis Cluster shard's).
func MarkerKeys(tag string) (marker, young, ttl string) {
	if tag == "" {
		return MarkerKey, YoungKey, TTLKey
	}
	t := "{" + tag + "}"
	return MarkerKey + t, YoungKey + t, TTLKey + t
}

// MarkerInit creates a data set's marker: if KEYS[1] (the marker) is the
// value expected, ARGV[1] ("" for absent), it sets KEYS[2] (the young
// key) to ARGV[2] with PX ARGV[3] (unless ARGV[3] is "0": a data set
// declared to hold no lock) and then KEYS[1] to ARGV[2], the new id; in
// one script, so no client ever sees the marker without its young key.
// Replies the marker now in place: ARGV[2] when it was set, else the
// other id found ("" when absent).
var MarkerInit = newScript("marker-init", `local cur = redis.call("get",KEYS[1])
if (cur == false and ARGV[1] == "") or cur == ARGV[1] then
    if ARGV[3] ~= "0" then
        redis.call("set",KEYS[2],ARGV[2],"px",ARGV[3])
    end
    redis.call("set",KEYS[1],ARGV[2])
    return ARGV[2]
end
if cur == false then
    return ""
end
return cur`)

// TTLRaise raises the TTL record KEYS[1] to ARGV[1] milliseconds if that
// is more (a value that is not a number counts as 0). Replies the record
// now in place.
var TTLRaise = newScript("ttl-raise", `local v = tonumber(redis.call("get",KEYS[1])) or 0
local n = tonumber(ARGV[1])
if n > v then
    redis.call("set",KEYS[1],ARGV[1])
    return n
end
return v`)

// Markers are the marker's scripts.
var Markers = []Script{MarkerInit, TTLRaise}
