// Package fakeserver runs fake Redis nodes in-process, for tests and
// benchmarks of Redis clients (redmux's Redlock client first of all), with
// fault injection: latency, down/up, blackhole (partition), restart with or
// without data loss, clock skew and drift, injected error and malformed
// replies.
//
// # Tour
//
// A Node is one server on a loopback port, built on
// github.com/tidwall/redcon, with its own keyspace (16 databases), expiry
// (lazy on access plus an active sweep) and clock. A Cluster is N
// independent nodes (Redlock's N masters, not Redis Cluster):
//
//	cl, err := fakeserver.StartCluster(5, fakeserver.Config{})
//	defer cl.Close()
//	cl.Nodes[0].SetLatency(10*time.Millisecond, 2*time.Millisecond)
//	cl.Nodes[1].Blackhole()
//	cl.Nodes[2].Restart(true, time.Second) // lose data, away for 1s
//
// Nodes speak RESP2 and RESP3 (after HELLO 3) with Redis 7.0's exact reply
// shapes and error texts for the connection commands (PING, ECHO, HELLO,
// AUTH, SELECT, CLIENT, COMMAND, INFO, CONFIG GET, QUIT), strings (SET with
// every option, GET, GETDEL, GETRANGE, STRLEN, MGET, SETNX, INCR/INCRBY/
// DECR/DECRBY), hashes (HSET, HGET, HDEL, HGETALL, HINCRBY, ...), lists
// (LPUSH, RPUSH, LPOP, RPOP, LLEN, LRANGE), sorted sets (ZADD with every
// flag, ZINCRBY, ZSCORE, ZCARD, ZREM, ZRANGE and ZREVRANGE by index), keys
// (DEL, UNLINK, EXISTS, TYPE, KEYS, SCAN, the EXPIRE family, PERSIST,
// TTL/PTTL, DBSIZE, FLUSHALL, FLUSHDB), transactions (MULTI, EXEC,
// DISCARD, WATCH, UNWATCH) and scripts (EVAL, EVALSHA, SCRIPT), with
// WRONGTYPE errors. A differential test
// checks this byte for byte against a real redis-server, including the lock
// scripts of redsync, node-redlock, Redisson and bsm/redislock.
//
// Scripts run in a real Lua 5.1 interpreter (github.com/yuin/gopher-lua)
// with Redis's redis.call/pcall/error_reply/status_reply/sha1hex, KEYS and
// ARGV, its Lua<->RESP conversions and its error format; they are atomic and
// see the node's clock faults and data loss like any command. A script
// running longer than Config.ScriptBusyAfter makes other clients get BUSY
// (SCRIPT KILL stops it unless it wrote); one running longer than
// Config.ScriptKillAfter, or growing the heap by more than 256 MB, is
// stopped, so a bad script never hangs a node. Those checks run between Lua
// instructions, so single built-ins are checked before they run: a pattern
// whose worst-case backtracking on its subject passes 1e8 steps
// (string.find, match, gmatch, gsub), a gsub, table.concat, string.rep or
// string.format result over 64 MB, a format width over 99 (as in Lua 5.1),
// or a gsub too costly to build, fails the script with an error; the node
// and the process go on. redmux's own lock scripts
// (package redlock/scripts) run natively, with the same replies.
//
// For Go tests: RunT starts a cluster closed by t.Cleanup; Node.Set, Get,
// Del, Keys, TTL seed and inspect keys, and FastForward moves a node's (or
// a cluster's) clock.
//
// Faults are set from Go (Node methods) or over RESP with the FAKE admin
// command (Config.DisableAdmin turns it off); docs/FAKESERVER.md is the
// reference for both.
//
// # Hostile input
//
// Every byte a client sends is validated before redcon's reader sees it
// (redcon's reader panics on some lengths and grows its buffer without
// bound on others). Malformed requests get Redis's "Protocol error" reply
// and the connection is closed; requests are limited by MaxBulkLen,
// MaxRequestBytes, MaxArgs and MaxInlineLen (and Redis's smaller limits
// before authentication), so a client cannot make a node use unbounded
// memory. Inline requests are split with Redis's rules by the fake itself,
// and every request costs time and memory proportional to its size.
//
// # Latency
//
// Reply latency is applied per connection by a writer goroutine that sends
// each batch of replies when it is due (read time + latency), so replies
// stay in order on a connection, pipelined requests are not delayed once per
// request, and one connection's latency never holds up another's.
package fakeserver
