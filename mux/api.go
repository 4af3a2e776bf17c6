package mux

// This file fixes the public surface of package mux so that redlock and bench
// can be written against it. Implementations live in the other files.

import (
	"context"
	"errors"
	"time"

	"github.com/redmux/redmux/resp"
)

// Script is a Lua script the client loads on every connection (SCRIPT LOAD in
// the connection set-up pipeline) so that EVALSHA normally hits. When a node
// answers NOSCRIPT to an EVALSHA of a registered script, the client resends
// that command as EVAL with the script's text (within the same Do) and
// reloads the script.
type Script struct {
	Text string // exact Lua source
	SHA  string // lower-case hex SHA1 of Text
}

// Config configures a Client. Zero values take the documented defaults.
type Config struct {
	Addrs        []string      // host:port of every node; required, 1..64 nodes
	Lanes        int           // connections per node (parallel batches); default 2*GOMAXPROCS, at least 2
	DialTimeout  time.Duration // non-blocking connect + set-up pipeline; default 1s
	Timeout      time.Duration // default per-batch deadline of Do; default 50ms
	HardTimeout  time.Duration // an owed reply older than this closes its connection; default 1s
	Username     string        // ACL user for AUTH (with Password); optional
	Password     string        // AUTH password; optional; never printed
	DB           int           // SELECT db when > 0
	RESP3        bool          // send HELLO 3 at set-up
	ClientName   string        // CLIENT SETNAME; default "redmux"
	Scripts      []Script      // loaded on every connection
	ReconnectMin time.Duration // first redial backoff; default 50ms
	ReconnectMax time.Duration // backoff cap (with jitter); default 2s
	Parser       resp.Parser   // reply limits; zero = resp defaults
}

// Errors a node's result can carry (compare with errors.Is).
var (
	ErrTimeout    = errors.New("mux: node timeout")                // no reply before the batch deadline
	ErrNodeDown   = errors.New("mux: node down")                   // not connected; redial runs in the background
	ErrConnBroken = errors.New("mux: connection broken")           // I/O error or EOF mid-batch; connection replaced
	ErrProtocol   = errors.New("mux: protocol error")              // malformed reply; connection replaced (wraps resp's error)
	ErrServer     = errors.New("mux: server error reply")          // matched by every *ServerError
	ErrClosed     = errors.New("mux: client closed")               // Do after or during Close
	ErrNotSent    = errors.New("mux: not sent")                    // the batch ended before this node's command was written
	ErrBadBatch   = errors.New("mux: batch does not match client") // node count mismatch, empty batch
)

// ServerError is a node's error reply (e.g. "WRONGTYPE ...", "NOAUTH ...").
// errors.Is(err, ErrServer) is true for it.
type ServerError struct {
	Node int
	Text string
}

// Policy says when Do may return.
type Policy struct {
	// Quorum, when > 0, lets Do return as soon as Quorum nodes succeeded, or
	// as soon as so many failed that Quorum is out of reach. 0 waits for
	// every node (or the deadline).
	Quorum int
	// Success decides whether a node's reply counts as a success (called
	// with the reply to the node's last command in the batch; a node with an
	// error reply to any command, or an error, is a failure). nil counts any
	// non-error reply as success. Pass a package-level func, not a closure,
	// to keep Do allocation-free.
	Success func(node int, r resp.Reply) bool
	// Timeout overrides Config.Timeout for this call when > 0. The deadline
	// is also bounded by ctx's.
	Timeout time.Duration
}

// Outcome summarises a finished Do.
type Outcome struct {
	Successes int  // nodes that succeeded
	Failures  int  // nodes that failed (error reply, predicate false, or an error other than ErrPending)
	Pending   int  // nodes still owing replies when Do returned (ErrPending or ErrTimeout; their replies are skipped later)
	Decided   bool // Quorum > 0 and the outcome was known early (reached or impossible)
}

// The methods of Client (client.go) and Batch (batch.go):
//
//	func New(cfg Config) (*Client, error)        // fails only on a bad Config (ErrConfig); unreachable nodes are marked down and redialled in the background
//	func (c *Client) N() int                      // node count
//	func (c *Client) Addrs() []string
//	func (c *Client) NewBatch() *Batch            // a reusable batch sized for this client
//	func (c *Client) Do(ctx context.Context, b *Batch, p Policy) (Outcome, error)
//	                                              // err only for ctx done (before start: zero Outcome), ErrClosed, ErrBadBatch; per-node results are in the batch
//	func (c *Client) Close() error
//	func (c *Client) NodeUp(i int) bool           // connection state as last seen
//	func (c *Client) NodeErr(i int) error         // why node i is down (ErrNodeDown wrapping the dial error), nil when up
//
//	func (b *Batch) Reset()                        // drop commands and results, keep buffers
//	func (b *Batch) Add(node int, cmd []byte)      // append one complete encoded command (copied) for node
//	func (b *Batch) Broadcast(cmd []byte)          // Add the same command to every node
//	func (b *Batch) Scratch() []byte               // a reusable empty buffer to encode a command into before Add/Broadcast
//	func (b *Batch) SetScratch(buf []byte)         // keep a grown scratch buffer
//	func (b *Batch) N() int; Commands(node int) int
//	func (b *Batch) Reply(node, k int) (resp.Reply, error) // node's k-th reply (0-based) or its error
//	func (b *Batch) Last(node int) (resp.Reply, error)     // node's reply to its last command
//	func (b *Batch) Err(node int) error                    // nil if every command of node got a non-error reply
var _ = context.Background
