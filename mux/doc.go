// Package mux is redmux's N-node client: "poor man's multiplexing" to N
// independent Redis masters on raw non-blocking sockets (or Go's net.Conn,
// for TLS and other systems). A call writes
// every node's commands first, then reads the replies as they arrive
// (epoll), so it costs about one round trip to the slowest node the
// decision needs, not the sum of N round trips; and in steady state it
// allocates nothing.
//
// # Tour
//
//	c, err := mux.New(mux.Config{Addrs: addrs, Scripts: scripts})
//	defer c.Close()
//	b := c.NewBatch()                     // reusable; one per goroutine
//	b.SetKey(key)                         // same key, same connection: in order
//	b.Broadcast(resp.AppendCommand(b.Scratch(), "SET", key, val, "NX", "PX", "30000"))
//	out, err := c.Do(ctx, b, mux.Policy{Quorum: c.N()/2 + 1, Success: mux.ReplyOK})
//	r, err := b.Last(i)                   // node i's reply, or its error
//
// A Batch holds, per node, one or more encoded commands (Add, or Broadcast
// for the same command to every node) and, after Do, every node's replies:
// Reply(node, k), Last(node), Err(node). Replies are copied into the batch,
// so they stay valid until the batch is Reset or used again.
//
// Do returns when its Policy is met: every node replied; or, with Quorum >
// 0, as soon as Quorum nodes succeeded (by the Success predicate; nil
// counts any non-error reply) or so many failed that Quorum is out of
// reach (Outcome.Decided); or the deadline passed (Policy.Timeout, default
// Config.Timeout = 50ms, bounded by ctx's deadline). Each node's result is
// its reply or a distinct error: ErrTimeout, ErrPending (the outcome was
// decided before its reply came), ErrNodeDown, ErrConnBroken, ErrProtocol,
// ErrNotSent, ErrClosed, or a *ServerError carrying the server's error
// text. Every node-level error is a *NodeError (node, address, kind) that
// also unwraps to its cause (ErrAuth, a *resp.ProtocolError, a syscall
// error); match kinds with errors.Is.
//
// # Shared connections and automatic pipelining
//
// A Client holds Config.Conns connections per node (default 1), shared by
// every goroutine. Do queues each node's commands on that node's
// connection and writes them straight to the socket unless another caller
// is writing: then it only appends, and that caller's write loop (or the
// poller, once a full socket drains) sends them with its own, so commands
// of concurrent batches go out in one write per node (write combining).
// Callers on different cores seldom meet inside a write, so when other
// callers are inside Do a caller that finds a connection's writer idle
// claims the writer role instead of writing, yields once
// (runtime.Gosched) so that the others run and append to the claimed
// queues, then writes for all of them, and yields again before each
// further write its loop makes for what was appended meanwhile; callers
// that find the role claimed only append. A lone caller writes at once:
// no yield, no hand-off. There
// is no goroutine per call. Each queued command leaves a reply slot in a FIFO,
// in send order; replies are parsed in place as they arrive and copied
// into the batch that owns the slot. A batch that returns early (quorum
// decided, timeout, ctx) is done: the replies still due to it are read and
// dropped when they come, never given to another batch. Bytes that arrive
// with no slot waiting (a stray reply) are a protocol error: the connection
// is replaced. A call never takes for its reply a stray that reached an
// idle connection before it: before it queues anything it reads what
// arrived, or, when someone else holds the reader token (below), waits
// until a read that began after its look has judged it. With other
// callers waiting in Do it does not look; a stray on a connection that
// owes replies is caught only by reply kinds (Batch.AddExpect). Known
// limit on io_uring: a stray still in the socket whose receive the kernel
// has not completed yet (its task work not run: a window of up to a few
// milliseconds on a loaded machine) is not seen by a caller that looks
// while another holds the token, and can pass for that caller's reply.
//
// # Ordering
//
// All commands from one Client to one node that use the same connection
// reach the node in the order their Do calls queued them. Batch.SetKey
// picks the connection by hashing the key, so batches for the same key
// (redlock sets the resource name) always share one: a release can never
// overtake its own acquire's SET on a slow node. With Conns = 1 every
// command to a node is in one order.
//
// # Reading, timeouts and the supervisor
//
// On Linux every connection of a client is in one epoll instance
// (level-triggered). Whoever waits on it holds the client's reader token
// and reads for every connection: it parses replies, delivers them and
// wakes each batch's caller once its outcome is decided; it resumes writes
// that found a socket full (EPOLLOUT); and every HardTimeout/4 it closes a
// connection whose oldest outstanding reply's batch deadline passed more
// than HardTimeout ago with no reply since (the node then fails with
// ErrNodeDown, cause "reply not received within HardTimeout"). Waiting is
// done in the Go netpoller (a second epoll descriptor, pollable, watches
// the first one), except for a lone leader's first Config.DirectWait
// (below).
//
// A caller that finds no other caller waiting and the token free takes it
// (it leads): it reads its own replies and gives the token back once its
// own call has settled. A leader alone in Do first blocks in the kernel
// itself (epoll_pwait2, or io_uring_enter) for up to Config.DirectWait, so
// the kernel wakes it directly when its replies arrive, with no runtime
// park/unpark or netpoller wake-up between; then it parks in the
// netpoller. By default (TransportAuto) it waits so for up to
// DefaultDirectWait, 1ms, as on io_uring; an explicit TransportEpoll keeps it off unless
// DirectWait is set, and a negative DirectWait turns it off everywhere.
// Callers that come while someone holds it follow: each waits on its batch for a reply
// wake-up, its deadline, ctx, or Close, whichever comes first. One poller
// goroutine per client takes the token when a leader leaves with followers
// still waiting, when a write waits for the socket to drain, and at each
// sweep; it reads first what arrived while nobody read. So one caller pays
// no goroutine hand-off, and many callers are served by the poller as
// before. A leader whose ctx can be cancelled looks at it at least every
// 2ms. A connection that breaks fails every batch still waiting on it at
// once.
//
// One background goroutine per node, its supervisor, redials that node's
// connections that broke or could not be made, with exponential backoff
// from ReconnectMin to ReconnectMax, jittered to [d/2, d]; a partitioned
// node whose dials hang delays only its own redials. Nothing on a caller's
// path ever dials: a node whose connection is down fails at once with
// ErrNodeDown (its last error is the cause; see NodeErr and NodeUp). New
// fails only on a bad Config.
//
// Every new connection is set up in one pipelined write (after the TLS
// handshake, for a TLS node): AUTH (password, or ACL user and password), HELLO
// 3 (Config.RESP3), SELECT (Config.DB), CLIENT SETNAME, and SCRIPT LOAD of
// every Config.Scripts entry; every reply is checked, a refused AUTH gives an
// error wrapping ErrAuth (the password never appears in errors; a node that
// answers NOAUTH to a client given no password is said to require one, with how
// to give it), and bytes past the last set-up reply fail the dial. When a node
// answers NOSCRIPT to an EVALSHA of a registered script, the same Do resends
// that command once as EVAL with the script's text, then SCRIPT LOADs it again;
// a second NOSCRIPT is the node's error. Only the error's first word, NOSCRIPT,
// is matched: Redis and Valkey word the rest differently.
//
// With Config.WatchFlushes the set-up also sends HELLO 3 and CLIENT
// TRACKING ON OPTIN (both may be refused: the connection then goes on
// without the watch, in RESP2 if HELLO was refused). Redis then writes on
// the connection, as a flush runs, the invalidation of every key (FLUSHALL,
// FLUSHDB, a full resync as a replica), ahead of every reply that follows;
// the reader notes it (Client.LastFlush) before it delivers a reply read
// after it, which is how redlock sees a data set replaced by a copy that
// carries its old marker (docs/OPERATIONS.md, rule 4). Other push frames
// are skipped. Where the watch was refused, redlock reads INFO replication
// instead; InfoField reads one field of such a reply without allocating.
//
// # Node URLs and TLS
//
// Config.Addrs takes "host:port" or a URL per node, in the Redis URI scheme
// that redis-cli and go-redis accept:
//
//	redis://[[user]:password@]host[:port][/db][?option=value&...]
//	rediss://...            the same over TLS
//
// The port defaults to 6379; the password must be percent-escaped where it
// holds '/', '?', '#' or '%' (a URL that would put part of it
// elsewhere is refused). A URL's user, password and db apply to its node
// and win over Config.Username, Password and DB; "redis://:pw@host" is the
// default user. Options (unknown ones are an error, as in go-redis): db,
// protocol (2 or 3: HELLO 3), client_name (go-redis's names); and, for
// rediss:// only, cacert (a PEM CA bundle), cert and key (a client
// certificate for mutual TLS), sni (the server name to send and verify),
// insecure or skip_verify (true: do not verify the server's certificate),
// min_version (1.2 or 1.3). Errors about a URL, NodeError.Addr and
// Client.Addrs show its password as ***. (The parser is the module's
// internal/nodeaddr, which redmux-bench shares to reach the same nodes on
// connections of its own and to keep passwords out of what it records.)
//
// Config.TLS (a *tls.Config) connects every node over TLS (a redis:// URL
// beside it is a config error, not a silent plaintext node); without it, a
// rediss:// URL turns TLS on for its node alone. Each node
// gets a clone: ServerName defaults to the node's host, MinVersion to TLS
// 1.2, certificates are verified against RootCAs (or the system's roots),
// and verification is skipped only when InsecureSkipVerify is set there or
// by a URL's option. The handshake is part of the background dial, bounded
// by DialTimeout with the set-up pipeline; a caller never waits for one. A
// failed handshake leaves the node down with a cause that wraps ErrTLS and
// the crypto/tls error (errors.As finds *tls.CertificateVerificationError,
// x509.UnknownAuthorityError, x509.HostnameError, ...), in one line (wrapped here), e.g.
//
//	mux: node down: node 0 (rediss://10.0.0.5:6380): TLS handshake failed (server name
//	10.0.0.5): tls: failed to verify certificate: x509: certificate signed by unknown authority
//
// A server that requires a client certificate the client lacks is named as
// such (TLS 1.3 servers refuse it only after the client's handshake is done:
// the refusal arrives during the set-up and is reported the same way).
//
// # Sentinel-managed nodes
//
// A node may be a Sentinel service: a primary with replicas, watched by
// sentinels that promote a replica when the primary fails. Its address
// takes lettuce's redis-sentinel:// scheme and sentinelMasterId option;
// further sentinels are repeated sentinel= options (lettuce separates them
// with commas, which node lists such as redmux-bench -nodes take for node
// separators):
//
//	redis-sentinel://[[user]:password@]host[:port][/db]?sentinelMasterId=name
//	    [&sentinel=host2[:port2]]...[&sentinel_username=u][&sentinel_password=p]
//
// The host (default port 26379) is the first sentinel. The user
// information, db, protocol and client_name are the primary's, as in a
// redis:// URL; sentinel_username and sentinel_password are the
// sentinels' own (go-redis's FailoverOptions names). Neither password is
// ever printed: NodeError.Addr and Client.Addrs show the master name and
// the sentinels, the primary's password as ***. TLS options and
// Config.TLS are refused: Sentinel nodes are plaintext for now.
//
// The primary is found at every dial (New and the supervisor; never on a
// caller's path): the sentinels are asked in turn, from the last one whose
// answer worked, with SENTINEL GET-MASTER-ADDR-BY-NAME (bounded by
// DialTimeout), and the process named is dialled with ROLE in its set-up
// pipeline: it must answer "master"; then every sentinel is asked at once,
// and the connection is kept only if a majority of them name that process
// and no switch was announced while it was set up (a replaced primary
// answers "master" for about 10 s). A process that answers as a replica,
// cannot be reached or is not confirmed sends the dial on to the next
// sentinel. Client.Replicas says how many replicas the confirming
// sentinels see healthy (redlock waits for their acknowledgement). When
// none works the node is
// down with a cause that wraps ErrSentinel and says what each sentinel
// answered (one line, wrapped here), e.g.
//
//	mux: node down: node 0 (redis-sentinel://10.0.0.5:26379?sentinelMasterId=locks&sentinel=
//	10.0.0.6:26379): no primary for sentinelMasterId "locks" from 2 sentinel(s); sentinel
//	10.0.0.5:26379: does not know sentinelMasterId "locks"; sentinel 10.0.0.6:26379 names
//	10.0.0.7:6379: set-up ROLE failed: the process answers ROLE slave, not master: the
//	sentinel's answer is stale or wrong
//
// A Sentinel node's connections are replaced, and the sentinels asked
// again, when they break (a failover kills or demotes the old primary,
// whose clients the sentinels disconnect), when a reply says READONLY or
// LOADING (checked on error replies only: nothing is added to the success
// path), and when a sentinel announces +switch-master to another address
// that answers ROLE master, or that a majority of the sentinels, asked
// within 100 ms, does not contradict (checked again every 100 ms for 3 s):
// one background goroutine per Sentinel node stays subscribed to one
// sentinel at a time, asks it for the primary each time it subscribes
// (an answer that differs is checked with the majority first), and PINGs
// it when it is quiet: a sentinel that does not answer within a second is
// left for the next one. Client.Primary says which process a node's newest
// connection was set up with; with Config.Incarnations the new primary's
// incarnation (promoted: a new replication history) is learned before its
// connection carries a command, which is how redlock quarantines it
// (docs/OPERATIONS.md, "Sentinel-managed nodes").
//
// # Redis Cluster nodes
//
// A node may be a Redis Cluster, given by any of its members:
//
//	redis-cluster://[[user]:password@]host[:port]
//	    [?seed=host2[:port2]]...[&protocol=3][&client_name=name]
//
// The host and the seeds (default port 6379; repeated seed= options, not commas, as for
// Sentinel nodes) are asked for the slot map, CLUSTER SHARDS or, before Redis 7, CLUSTER
// SLOTS, at New and whenever the map may have moved (never on a caller's path). The node
// has Config.Conns connections to each primary that serves slots (at most
// MaxClusterShards), each set up with ROLE in its pipeline. A batch goes to the primary
// of its key's slot: Batch.SetKey's key, hashed as Redis does (KeySlot: the hash tag
// between the first '{' and the next '}' when not empty), so every key of a batch must
// share that slot; an unkeyed batch fails on a cluster node with ErrNotSent. A MOVED or
// ASK reply is followed within the call: the command (which did nothing) is resent once
// to the primary the reply names, after ASKING for ASK, when the map knows it and its
// connection is up and has room (see Bounds); else, and for TRYAGAIN and CLUSTERDOWN, the
// reply is delivered as the error it is. Each makes the node's supervisor ask for the map
// again; so does a broken shard connection (its primary may have failed over). Each shard
// is dialled and redialled on its own, with its own backoff: a shard whose primary is
// down or never answers fails only the batches routed to it. The node's incarnation
// (Config.Incarnations) is every primary's together: a restart or failover of any of them
// is one of the node. Client.Shards and Client.ShardOf say where keys go. A node whose
// map cannot be had is down with a cause wrapping ErrCluster that says what each member
// answered. TLS is refused for cluster nodes for now.
//
// # Bounds
//
// Memory stays bounded whatever the nodes do, on every transport: a
// connection queues at most MaxQueuedBytes of unwritten commands (bytes a
// writer is handing to the socket count too) and MaxPending outstanding
// replies (callers wait for room, within their deadline, then fail the node
// with ErrTimeout without writing anything; a full node is waited for only
// after every other node's commands are queued, and not at all once the
// call is decided; a MOVED or ASK redirect or a NOSCRIPT retry, sent
// from the reader's path, which does not wait, is not sent when it finds
// the queue full: the reply that asked for it is delivered as the error
// it is), and accepts replies up to MaxReplyBytes (a slot map and a
// sentinel's answers too; a larger one
// breaks the connection with ErrProtocol, and the grown read buffer is
// released). A connection costs about 20 KB of Go heap once used, on
// epoll and io_uring alike (mostly its 16 KiB read buffer; 512
// connections, TestConnHeap); its write buffers grow to what is written
// and stay (io_uring's two send buffers, up to 1 MiB each for a large
// batch, stay while at most 64 KiB and the larger go when the connection
// is idle; allocated whole before: 151 KB per connection, 484.5 MB for
// 3,600), and io_uring maps
// two 16 KiB receive buffers per connection outside the Go heap.
// resp.Parser's limits (Config.Parser) reject absurd declared
// lengths and nesting before any of it is buffered.
//
// One bad node never starves the others: the epoll reader reads at most
// 256 KiB from a connection per turn, round-robin over the ready ones, so a
// node streaming without end (RESP3 push frames, which are skipped, or a
// huge reply) is read a slice at a time. Push frames right after the
// set-up replies are skipped too. A command added with Batch.AddExpect
// says which reply kinds it accepts (SET NX: ExpectSimple|ExpectNil; an
// integer script: ExpectInt): a reply of another kind, the mark of a
// stray reply that shifted the connection's replies, breaks the connection
// instead of reaching the wrong command. A panic in Policy.Success is
// recovered where it ran (the poller included): only its call fails, with
// a *PanicError. Close ends redials mid-set-up at once, on every
// transport.
//
// # Knobs
//
//	Conns           connections per node, shared by every caller; default 1
//	DialTimeout     connect + set-up pipeline; default 1s
//	Timeout         per-batch deadline; default 50ms (Policy.Timeout per call)
//	HardTimeout     how long past its batch's deadline a reply may be late before its
//	                connection is replaced; default 1s
//	MaxQueuedBytes  unwritten bytes per connection before callers wait; default 4 MiB
//	MaxPending      outstanding replies per connection before callers wait; default 32768
//	MaxReplyBytes   largest reply; default 1 MiB
//	ReconnectMin, ReconnectMax  redial backoff; default 50ms, 2s
//	Parser          reply limits (resp.Parser); zero = resp's defaults
//	TLS             *tls.Config for every node; nil = plaintext (rediss:// URLs per node)
//
// # Transports
//
// The engine (queues, slots, decisions) is written once over a small seam
// (transport.go): a driver dials and reads connections, a link is one
// connection. On Linux connections are raw non-blocking sockets
// (golang.org/x/sys/unix: TCP_NODELAY, keepalive, non-blocking connect
// bounded by DialTimeout, host names resolved at dial time), driven by the
// epoll poller above (TransportEpoll) or by an io_uring (TransportIOURing;
// Linux 5.19, 64-bit little-endian; pure Go over x/sys/unix, in
// mux/internal/poll): a lone caller's sends and its wait for the replies
// are one io_uring_enter, and each connection keeps one receive armed into
// buffers of its own. The default, TransportAuto, is epoll with a lone
// caller waiting in the kernel (a 1ms DirectWait), the one measured best
// (results/cost/README.md, "The default transport, measured again");
// Client.Transport says which runs ("epoll (auto)", "io_uring", or "epoll
// (io_uring refused: ...)"). Measure both on your machines (redmux-bench
// -transport). Opt out with Transport: TransportEpoll (epoll, the lone
// caller parking in the netpoller unless DirectWait is set) or a negative
// DirectWait (no direct wait on any transport); opt in to io_uring with
// TransportIOURing (epoll where the kernel or a policy refuses it).
//
// Other systems, and Linux built with -tags redmux_portable (tested in
// CI), use Go's net.Conn: one reader goroutine per connection, writes
// bounded to short slices so a caller never blocks past its deadline; same
// API and semantics, more goroutines, and no zero-allocation promise
// (every caller follows: its connections' reader goroutines wake it). A
// client with any TLS node runs every connection on the net.Conn transport
// (a *tls.Conn is a net.Conn; results/tls measures the cost): a TLS write
// that would block is never timed out, which would break the TLS
// connection for good; what the socket does not take within the write
// slice is kept under the TLS layer and written in the background while
// the engine holds its queue. Close makes the poller stop (or closes the
// net.Conns), fails every waiting batch with ErrClosed, closes every
// socket, and returns when every goroutine of the client has ended.
//
// # Zero allocation
//
// In steady state Do allocates nothing, alone or with many goroutines
// calling at once: commands and replies live in buffers owned by the batch
// and the connection (they grow to the working size and stay), reply slots
// are a ring that grows the same way, each batch owns its wake channel and
// one reusable timer (a follower's deadline is mostly kept by the reader
// instead: the timer is armed only when the reader's wait could outlast
// it), and errors of the success path are preallocated.
// Pass package-level functions as Policy.Success (a closure may allocate).
// The cold paths (node errors, NOSCRIPT fallback, back-pressure waits,
// redial) allocate.
package mux
