// Package nodeaddr resolves node addresses (host:port, and redis://,
// rediss://, redis-sentinel:// and redis-cluster:// URLs) as mux.New does,
// and keeps their passwords out of what is printed (RedactURL, URLSecrets,
// HideURLSecrets, URLPassword). It is the one parser: mux resolves
// Config.Addrs with it, and redmux-bench with it reaches the same nodes on
// connections of its own (seq and fanout), checks a node list before any
// dial (CheckDistinct) and scrubs what it records. It also carries mux's
// connection set-up (Setup) to bench. Not in mux's exported API, which is
// for lock users.
package nodeaddr
