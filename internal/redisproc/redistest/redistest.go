// Package redistest is test support for tests that run against real
// redis-server processes: it starts them with package redisproc, stops them
// in t.Cleanup, and decides what a missing redis-server means.
//
// When redis-server is not installed a test is skipped with a loud message,
// unless REDMUX_REQUIRE_REDIS is set (CI sets it), in which case the test
// fails. Only _test.go files import this package (the architecture test
// checks it): it imports package testing.
package redistest

import (
	"os"
	"testing"

	"github.com/redmux/redmux/internal/redisproc"
)

// EnvRequire is the environment variable that turns a missing redis-server
// into a test failure instead of a skip.
const EnvRequire = "REDMUX_REQUIRE_REDIS"

// Options is redisproc.Options, so that a test needs one import.
type Options = redisproc.Options

// Required reports whether REDMUX_REQUIRE_REDIS is set to a non-empty value
// other than "0".
func Required() bool {
	v := os.Getenv(EnvRequire)
	return v != "" && v != "0"
}

// Require skips t (loudly) when redis-server is absent and not required, and
// fails t when it is absent but required.
func Require(t testing.TB) {
	t.Helper()
	if redisproc.Available() {
		return
	}
	if Required() {
		t.Fatalf("redis-server is not installed but %s is set: install it (apt-get install redis-server)", EnvRequire)
	}
	t.Skipf("SKIPPED: redis-server is not installed (set %s=1 to make this a failure); this test did NOT run against real Redis", EnvRequire)
}

// RequireTLS is Require for a redis-server built with TLS (--tls-port):
// one without it skips t loudly, or fails t under REDMUX_REQUIRE_REDIS.
func RequireTLS(t testing.TB) {
	t.Helper()
	Require(t)
	if redisproc.SupportsTLS() {
		return
	}
	if Required() {
		t.Fatalf("redis-server %s was built without TLS (--tls-port) but %s is set: install one built with BUILD_TLS=yes (Debian's is)", redisproc.Binary(), EnvRequire)
	}
	t.Skipf("SKIPPED: redis-server %s was built without TLS (set %s=1 to make this a failure); this test did NOT run against real Redis over TLS", redisproc.Binary(), EnvRequire)
}

// Certs writes a fresh CA, server and client certificates into a
// directory removed when t ends (redisproc.WriteCerts).
func Certs(t testing.TB, opt redisproc.CertOptions) *redisproc.TLS {
	t.Helper()
	files, err := redisproc.WriteCerts(t.TempDir(), opt)
	if err != nil {
		t.Fatalf("certificates: %v", err)
	}
	return files
}

// Start calls Require, starts one redis-server (failing t on error) and
// stops it in t.Cleanup.
func Start(t testing.TB, opt Options) *redisproc.Server {
	t.Helper()
	if opt.TLS != nil {
		RequireTLS(t)
	}
	Require(t)
	s, err := redisproc.Start(opt)
	if err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// StartN is Start for n servers.
func StartN(t testing.TB, n int, opt Options) []*redisproc.Server {
	t.Helper()
	if opt.TLS != nil {
		RequireTLS(t)
	}
	Require(t)
	list, err := redisproc.StartN(n, opt)
	if err != nil {
		t.Fatalf("start %d redis-servers: %v", n, err)
	}
	t.Cleanup(func() { redisproc.StopAll(list) })
	return list
}

// Addrs returns the servers' addresses (redisproc.Addrs).
func Addrs(list []*redisproc.Server) []string { return redisproc.Addrs(list) }

// SentinelOptions is redisproc.SentinelOptions, so that a test needs one
// import.
type SentinelOptions = redisproc.SentinelOptions

// StartSentinelGroup calls Require, starts a primary, its replicas and
// its sentinels (redisproc.StartSentinelGroup; failing t on error) and
// stops them in t.Cleanup.
func StartSentinelGroup(t testing.TB, opt SentinelOptions) *redisproc.SentinelGroup {
	t.Helper()
	Require(t)
	g, err := redisproc.StartSentinelGroup(opt)
	if err != nil {
		t.Fatalf("start a sentinel group: %v", err)
	}
	t.Cleanup(g.Stop)
	return g
}

// ClusterOptions shape a Redis Cluster (redisproc.ClusterOptions).
type ClusterOptions = redisproc.ClusterOptions

// StartCluster starts a Redis Cluster (redisproc.StartCluster), stopped
// when t ends; a missing redis-server skips loudly (fails under
// REDMUX_REQUIRE_REDIS).
func StartCluster(t testing.TB, opt ClusterOptions) *redisproc.Cluster {
	t.Helper()
	Require(t)
	cl, err := redisproc.StartCluster(opt)
	if err != nil {
		t.Fatalf("start a redis cluster: %v", err)
	}
	t.Cleanup(cl.Stop)
	return cl
}
