// Package interop proves that other Redlock clients run on redmux's fake
// Redis (package fakeserver): go-redsync/redsync v4 on go-redis v9,
// redis/rueidis's rueidislock and bsm/redislock each lock, extend, unlock
// and contend on an in-process fake cluster, and meet one fault each (a
// node down, a slow node, a restart that loses data) with the outcome the
// library should give.
//
// Package interop/observe records redlock's Observer events as Prometheus
// or OpenTelemetry metrics, here so the main module depends on neither.
//
// It is a separate module (its own go.mod, with a replace of the main
// module) so the main module's dependency list does not grow. Run it with
// "make interop" or "cd interop && go test ./...".
package interop
