package mux

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

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
	Addrs          []string      // host:port of every node; required, 1..64 nodes
	Conns          int           // connections per node, shared by every caller; default 1, at most 64
	DialTimeout    time.Duration // connect + set-up pipeline; default 1s
	Timeout        time.Duration // default per-batch deadline of Do; default 50ms
	HardTimeout    time.Duration // a reply outstanding longer than this closes its connection; default 1s
	MaxQueuedBytes int           // unwritten bytes per connection before callers wait; default 4 MiB
	MaxReplyBytes  int           // largest reply accepted; a larger one breaks the connection (ErrProtocol); default 1 MiB
	Username       string        // ACL user for AUTH (with Password); optional
	Password       string        // AUTH password; optional; never printed
	DB             int           // SELECT db when > 0
	RESP3          bool          // send HELLO 3 at set-up
	ClientName     string        // CLIENT SETNAME; default "redmux"
	Scripts        []Script      // loaded on every connection
	ReconnectMin   time.Duration // first redial backoff; default 50ms
	ReconnectMax   time.Duration // backoff cap (with jitter); default 2s
	Parser         resp.Parser   // reply limits; zero = resp defaults
}

// Defaults of a zero Config field.
const (
	DefaultConns          = 1
	DefaultDialTimeout    = time.Second
	DefaultTimeout        = 50 * time.Millisecond
	DefaultHardTimeout    = time.Second
	DefaultMaxQueuedBytes = 4 << 20
	DefaultMaxReplyBytes  = 1 << 20
	DefaultClientName     = "redmux"
	DefaultReconnectMin   = 50 * time.Millisecond
	DefaultReconnectMax   = 2 * time.Second
	// MaxNodes is the largest number of nodes a Client accepts.
	MaxNodes = 64
	// MaxConns is the largest Config.Conns.
	MaxConns = 64
)

// resolved is a Config with every default applied and every field checked.
type resolved struct {
	Config
	hosts []string
	ports []int
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
	r.Addrs = append([]string(nil), cfg.Addrs...)
	for i, a := range r.Addrs {
		h, p, err := net.SplitHostPort(a)
		if err != nil {
			return nil, fmt.Errorf("%w: address %d %q: %v", ErrConfig, i, a, err)
		}
		port, err := strconv.Atoi(p)
		if err != nil || port <= 0 || port > 65535 {
			return nil, fmt.Errorf("%w: address %d %q: bad port", ErrConfig, i, a)
		}
		if h == "" {
			h = "127.0.0.1"
		}
		r.hosts = append(r.hosts, h)
		r.ports = append(r.ports, port)
	}
	if r.Conns == 0 {
		r.Conns = DefaultConns
	}
	if r.Conns < 0 || r.Conns > MaxConns {
		return nil, fmt.Errorf("%w: Conns %d, want 1..%d", ErrConfig, r.Conns, MaxConns)
	}
	if r.MaxQueuedBytes < 0 || r.MaxReplyBytes < 0 {
		return nil, fmt.Errorf("%w: negative MaxQueuedBytes or MaxReplyBytes", ErrConfig)
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
