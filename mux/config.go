package mux

import (
	"crypto/sha1"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/redmux/redmux/internal/nodeaddr"
	"github.com/redmux/redmux/resp"
)

// Script is a Lua script the client loads on every connection (SCRIPT LOAD in
// the connection set-up pipeline) so that EVALSHA normally hits. When a node
// answers NOSCRIPT to an EVALSHA of a registered script, the client resends
// that command once as EVAL with the script's text (within the same Do) and
// reloads the script.
type Script struct {
	Text string // exact Lua source
	SHA  string // lower-case hex SHA1 of Text (computed when empty)
}

// Config configures a Client. Zero values take the documented defaults.
type Config struct {
	// Addrs are the nodes, 1..64 of them, each "host:port" or a URL:
	// redis://[[user]:password@]host[:port][/db][?options], or rediss://
	// for TLS. A URL's user, password, db and options apply to its node
	// and win over the fields below; see the package documentation
	// ("Node URLs and TLS") for the options. Errors, NodeError.Addr and
	// Client.Addrs show a URL's password as ***. Each server once: New
	// refuses two entries that reach one server.
	Addrs          []string
	Conns          int           // connections per node, shared by every caller; default 1, at most 64
	DialTimeout    time.Duration // connect + set-up pipeline; default 1s
	Timeout        time.Duration // default per-batch deadline of Do; default 50ms
	HardTimeout    time.Duration // a reply outstanding longer than this closes its connection; default 1s
	MaxQueuedBytes int           // unwritten bytes per connection (queued or being written) before callers wait; default 4 MiB
	// MaxPending caps the replies outstanding on one connection (sent or
	// queued, not yet read, abandoned ones included): a caller that would
	// pass it waits for replies to arrive, bounded by its deadline (then
	// the node fails with ErrTimeout), as for MaxQueuedBytes. It bounds the
	// memory a node that answers slowly can hold. Default 32768.
	MaxPending    int
	MaxReplyBytes int           // largest reply accepted; a larger one breaks the connection (ErrProtocol); default 1 MiB
	Username      string        // ACL user for AUTH (with Password); optional
	Password      string        // AUTH password; optional; never printed
	DB            int           // SELECT db when > 0
	RESP3         bool          // send HELLO 3 at set-up
	ClientName    string        // CLIENT SETNAME; default "redmux"
	Scripts       []Script      // loaded on every connection
	ReconnectMin  time.Duration // first redial backoff; default 50ms
	ReconnectMax  time.Duration // backoff cap (with jitter); default 2s
	Parser        resp.Parser   // reply limits; zero = resp defaults
	// DirectWait, when positive, is how long a lone caller waiting for
	// its replies (no other caller in Do) blocks in the kernel
	// (epoll_pwait2 on the client's sockets, or io_uring_enter) before it
	// parks in the Go netpoller: the kernel then wakes it when replies
	// arrive, with no runtime park/unpark and no netpoller wake-up in
	// between. It holds an OS thread (not a CPU) while it waits, and a
	// ctx cancelled meanwhile is noticed when it ends. 0 means the
	// transport's default: DefaultDirectWait (1ms) on TransportAuto's
	// epoll and on io_uring (the lone caller waits in the kernel by
	// default), off on an explicit TransportEpoll (as before issue 35).
	// Negative is off everywhere: the opt-out. On a
	// shared 2-core machine a 1ms direct wait cut a lone caller's system
	// calls per acquire+release pair on epoll from 36.7 to 26.4 and its
	// client CPU to 0.86x (median of 7 rounds; results/cost, issue 35
	// item 2); measure it on your own machines (redmux-bench
	// -direct-wait). Ignored with
	// GOMAXPROCS 1 at New (the one P would stay with the blocked thread
	// until the runtime retakes it).
	DirectWait time.Duration
	// Transport picks how connections are driven on Linux (see
	// Transports in the package documentation): TransportAuto, the zero
	// value, runs epoll with a lone caller's DirectWait; TransportEpoll
	// and TransportIOURing name one (io_uring falls back to epoll where
	// the kernel or a policy refuses it). Client.Transport says which
	// runs.
	// Other systems, -tags redmux_portable and TLS clients use net.Conn
	// whatever it says.
	Transport Transport
	// TLS, when set, connects every node over TLS with this configuration
	// (host:port and rediss:// nodes; a redis:// URL is then an error). Without
	// it, rediss:// URLs turn TLS on for their node alone. It is cloned per
	// node; ServerName defaults to the node's host, MinVersion to TLS 1.2.
	// Certificates are verified (RootCAs, or the system's pool when nil) unless
	// InsecureSkipVerify is set here or by a URL's skip_verify/insecure option:
	// never by default. A client with any TLS node runs every connection on the
	// net.Conn transport (see Transports).
	TLS *tls.Config
	// Incarnations: learn each node's incarnation (Client.Incarnation: its
	// run_id, replication id, role and uptime) at every connection
	// set-up, with INFO server and INFO replication in the set-up
	// pipeline (nothing on the hot path). A node that refuses INFO is
	// set up all the same, its incarnation unknown. A node that says it is
	// a replica (role:slave) is not: its set-up fails and is made again
	// until the node is a primary, since a promotion would keep the
	// connection with the replica's history. redlock turns it on
	// (docs/OPERATIONS.md).
	Incarnations bool
	// WatchFlushes: ask every node to tell each connection when its data
	// set is flushed or replaced (FLUSHALL, FLUSHDB, a full resync from
	// another server), on the connection itself, ahead of every reply
	// that follows (Client.LastFlush, flush.go): the set-up sends HELLO 3
	// and CLIENT TRACKING ON OPTIN (Redis 6 and later), which track no
	// key. A node that refuses either (an older server, a proxy, an ACL)
	// is set up without the watch, in RESP2 when HELLO 3 was refused; its
	// Incarnation's WatchesFlushes says which. redlock turns it on
	// (docs/OPERATIONS.md, rule 4).
	WatchFlushes bool
}

// Transport is a way of driving a Client's connections (Config.Transport).
type Transport uint8

const (
	// TransportAuto, the zero value, the transport measured best on
	// both machines the project measures on: epoll, with a lone caller
	// waiting in the kernel for its replies (DirectWait defaulting to
	// DefaultDirectWait; Client.Transport says "epoll (auto)"). io_uring
	// is not chosen for you: on a 16-core machine it was slower and
	// dearer than this under 1 and 16 callers, and on 2 cores no better
	// but for a few percent of a lone caller's CPU (results/cost,
	// "The default transport, measured again"). Opt out with
	// TransportEpoll (epoll, no direct wait unless DirectWait is set), a
	// negative DirectWait, or TransportIOURing.
	TransportAuto Transport = iota
	// TransportEpoll: raw non-blocking sockets watched by epoll; a lone
	// caller parks in the netpoller unless DirectWait is positive.
	TransportEpoll
	// TransportIOURing: raw sockets driven by an io_uring: a lone caller's
	// sends and its wait for their replies are one io_uring_enter. A
	// lone caller waits in the kernel for up to DirectWait, 1ms when it
	// is 0 (negative: never). Needs Linux 5.19 on a 64-bit little-endian
	// machine; New falls back to epoll when the ring cannot be set up (an
	// older kernel, a seccomp policy, the io_uring_disabled sysctl).
	TransportIOURing
)

// String returns the transport's name ("auto", "epoll", "io_uring").
func (t Transport) String() string {
	switch t {
	case TransportAuto:
		return "auto"
	case TransportEpoll:
		return "epoll"
	case TransportIOURing:
		return "io_uring"
	}
	return "Transport(" + strconv.Itoa(int(t)) + ")"
}

// Defaults of a zero Config field.
const (
	DefaultConns          = 1
	DefaultDialTimeout    = time.Second
	DefaultTimeout        = 50 * time.Millisecond
	DefaultHardTimeout    = time.Second
	DefaultMaxQueuedBytes = 4 << 20
	DefaultMaxReplyBytes  = 1 << 20
	DefaultMaxPending     = 1 << 15
	DefaultClientName     = "redmux"
	DefaultReconnectMin   = 50 * time.Millisecond
	DefaultReconnectMax   = 2 * time.Second
	// DefaultDirectWait is a lone caller's wait in the kernel when
	// DirectWait is 0, on TransportAuto's epoll and on io_uring.
	DefaultDirectWait = time.Millisecond
	// MaxNodes is the largest number of nodes a Client accepts.
	MaxNodes = 64
	// MaxConns is the largest Config.Conns.
	MaxConns = 64
)

// resolved is a Config with every default applied and every field checked.
type resolved struct {
	Config
	nodes []nodeSpec // per node: address, credentials, db, TLS
	tls   bool       // some node uses TLS: the net.Conn transport runs the client
	// directOff: DirectWait was negative, or GOMAXPROCS is 1 (no direct
	// waits at all, io_uring's default budget included).
	directOff bool
	// learn stores node i's incarnation learned by a set-up (New sets it
	// when Incarnations is on), before the connection is installed.
	learn func(i, shard int, inc *Incarnation)
	// flushed notes a flush of node i's data set read by a set-up
	flushed func(i int)
}

func resolve(cfg Config) (*resolved, error) {
	r := &resolved{Config: cfg}
	n := len(cfg.Addrs)
	if n == 0 {
		return nil, fmt.Errorf("%w: no addresses", ErrConfig)
	}
	if n > MaxNodes {
		return nil, fmt.Errorf("%w: %d addresses, at most %d", ErrConfig, n, MaxNodes)
	}
	if r.Conns == 0 {
		r.Conns = DefaultConns
	}
	if r.Conns < 0 || r.Conns > MaxConns {
		return nil, fmt.Errorf("%w: Conns %d, want 1..%d", ErrConfig, r.Conns, MaxConns)
	}
	if r.MaxQueuedBytes < 0 || r.MaxReplyBytes < 0 || r.MaxPending < 0 {
		return nil, fmt.Errorf("%w: negative MaxQueuedBytes, MaxReplyBytes or MaxPending", ErrConfig)
	}
	if r.MaxPending == 0 {
		r.MaxPending = DefaultMaxPending
	}
	if r.MaxQueuedBytes == 0 {
		r.MaxQueuedBytes = DefaultMaxQueuedBytes
	}
	if r.MaxReplyBytes == 0 {
		r.MaxReplyBytes = DefaultMaxReplyBytes
	}
	if r.MaxReplyBytes < 64 {
		return nil, fmt.Errorf("%w: MaxReplyBytes %d, want at least 64", ErrConfig, r.MaxReplyBytes)
	}
	def := func(d *time.Duration, v time.Duration, name string) error {
		if *d < 0 {
			return fmt.Errorf("%w: negative %s", ErrConfig, name)
		}
		if *d == 0 {
			*d = v
		}
		return nil
	}
	for _, e := range []error{
		def(&r.DialTimeout, DefaultDialTimeout, "DialTimeout"),
		def(&r.Timeout, DefaultTimeout, "Timeout"),
		def(&r.HardTimeout, DefaultHardTimeout, "HardTimeout"),
		def(&r.ReconnectMin, DefaultReconnectMin, "ReconnectMin"),
		def(&r.ReconnectMax, DefaultReconnectMax, "ReconnectMax"),
	} {
		if e != nil {
			return nil, e
		}
	}
	if r.DirectWait < 0 || runtime.GOMAXPROCS(0) == 1 {
		r.DirectWait, r.directOff = 0, true
	}
	if r.Transport > TransportIOURing {
		return nil, fmt.Errorf("%w: unknown Transport %d", ErrConfig, r.Transport)
	}
	if r.ReconnectMax < r.ReconnectMin {
		r.ReconnectMax = r.ReconnectMin
	}
	if r.DB < 0 {
		return nil, fmt.Errorf("%w: negative DB", ErrConfig)
	}
	if r.Username != "" && r.Password == "" {
		return nil, fmt.Errorf("%w: Username without Password", ErrConfig)
	}
	if r.ClientName == "" {
		r.ClientName = DefaultClientName
	}
	if strings.ContainsAny(r.ClientName, " \r\n") {
		return nil, fmt.Errorf("%w: ClientName %q has spaces or newlines", ErrConfig, r.ClientName)
	}
	// Addresses last: a URL's values default to the fields checked above.
	// r.Addrs become the printable forms (a URL's password as ***).
	r.Addrs = make([]string, n)
	parsed := make([]nodeaddr.Node, 0, n)
	for i, a := range cfg.Addrs {
		na, err := nodeaddr.Parse(i, a, r.defaults())
		if err != nil {
			return nil, err
		}
		if strings.ContainsAny(na.ClientName, " \r\n") {
			return nil, fmt.Errorf("%w: address %d: client_name %q has spaces or newlines", ErrConfig, i, na.ClientName)
		}
		parsed = append(parsed, na)
		r.nodes = append(r.nodes, specOf(&na))
		r.Addrs[i] = na.Display
		r.tls = r.tls || na.TLS != nil
	}
	if err := nodeaddr.Distinct(parsed); err != nil {
		return nil, err
	}
	r.Scripts = append([]Script(nil), cfg.Scripts...)
	for i, s := range r.Scripts {
		sum := sha1.Sum([]byte(s.Text))
		want := hex.EncodeToString(sum[:])
		if s.SHA == "" {
			r.Scripts[i].SHA = want
			continue
		}
		if strings.ToLower(s.SHA) != want {
			return nil, fmt.Errorf("%w: script %d: SHA %q is not the SHA1 of its text (%s)", ErrConfig, i, s.SHA, want)
		}
		r.Scripts[i].SHA = want
	}
	return r, nil
}

// script returns the registered script whose SHA equals sha
// (case-insensitive), or nil.
func (r *resolved) script(sha []byte) *Script {
	for i := range r.Scripts {
		if strings.EqualFold(r.Scripts[i].SHA, string(sha)) {
			return &r.Scripts[i]
		}
	}
	return nil
}
