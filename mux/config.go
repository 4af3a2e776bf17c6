package mux

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Defaults of a zero Config field.
const (
	DefaultDialTimeout  = time.Second
	DefaultTimeout      = 50 * time.Millisecond
	DefaultHardTimeout  = time.Second
	DefaultClientName   = "redmux"
	DefaultReconnectMin = 50 * time.Millisecond
	DefaultReconnectMax = 2 * time.Second
	// MaxNodes is the largest number of nodes a Client accepts.
	MaxNodes = 64
)

// ErrConfig is wrapped by every error New returns for a bad Config.
var ErrConfig = errors.New("mux: bad config")

// ErrAuth is wrapped by the node error of a connection whose set-up failed
// authentication (a wrong password or user, or NOAUTH because no password
// was configured). The password never appears in it.
var ErrAuth = errors.New("mux: AUTH failed")

// ErrPending is a node's error when Do returned early (the quorum outcome
// was decided) before the node's reply arrived. The node is neither a
// success nor a failure in the Outcome; it is counted in Pending, and its
// reply is skipped by the next batch on that connection.
var ErrPending = errors.New("mux: reply not awaited (outcome decided early)")

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
	if r.Lanes <= 0 {
		r.Lanes = 2 * runtime.GOMAXPROCS(0)
	}
	if r.Lanes < 2 {
		r.Lanes = 2
	}
	if r.Lanes > 1024 {
		return nil, fmt.Errorf("%w: %d lanes, at most 1024", ErrConfig, r.Lanes)
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
