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
// shapes and error texts for PING, ECHO, HELLO, AUTH, SELECT, CLIENT
// (ID/SETNAME/GETNAME/INFO/LIST), COMMAND (COUNT/INFO/LIST/DOCS), INFO,
// CONFIG GET, QUIT, SET (NX/XX/GET/KEEPTTL/EX/PX/EXAT/PXAT), GET, DEL,
// EXISTS, INCR, EXPIRE/PEXPIRE (NX/XX/GT/LT), TTL/PTTL, TYPE, DBSIZE,
// FLUSHALL, FLUSHDB, SCRIPT LOAD/EXISTS/FLUSH/KILL, EVAL and EVALSHA. A
// differential test checks this byte for byte against a real redis-server.
// Only string values exist, so WRONGTYPE cannot arise.
//
// There is no Lua interpreter: EVAL/EVALSHA run the scripts of package
// redlock/scripts natively, recognised by the SHA1 of their exact text.
// Any other script gets an error saying so; EVALSHA of an unloaded SHA gets
// Redis's NOSCRIPT error.
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
// MaxRequestBytes, MaxArgs and MaxInlineLen, so a client cannot make a
// node use unbounded memory.
//
// # Latency
//
// Reply latency is applied per connection by a writer goroutine that sends
// each batch of replies when it is due (read time + latency), so replies
// stay in order on a connection, pipelined requests are not delayed once per
// request, and one connection's latency never holds up another's.
package fakeserver
