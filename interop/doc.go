// Package interop proves that other Redlock clients run on redmux's fake
// Redis (package fakeserver): go-redsync/redsync v4 on go-redis v9,
// redis/rueidis's rueidislock and bsm/redislock each lock, extend, unlock
// and contend on an in-process fake cluster, and meet one fault each (a
// node down, a slow node, a restart that loses data) with the outcome the
// library should give.
//
// It is a separate module (its own go.mod, with a replace of the main
// module) so the main module's dependency list does not grow. Run it with
// "make interop" or "cd interop && go test ./...".
//
// Package interop/observe (redlock's Observer events as Prometheus or
// OpenTelemetry metrics) is another module, nested in this directory with
// its own go.mod, so that an application importing it does not get the
// peer clients above; "make interop" tests it too.
package interop
