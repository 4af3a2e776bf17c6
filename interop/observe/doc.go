// Package observe turns redlock's Observer events into metrics: Prometheus
// (client_golang) and OpenTelemetry. It is a module of its own
// (github.com/redmux/redmux/interop/observe, go.mod in this directory), so
// that the main module depends on neither library and an application that
// imports it gets redmux, Prometheus and OpenTelemetry but none of the
// interop module's peer lock clients. It needs Go 1.24 (its go directive is
// 1.24.0, OpenTelemetry v1.41's; v1.42 and later need Go 1.25). README.md's
// Install section has the recipe.
//
// Both adapters record the same instruments:
//
//	redlock_operation_duration_seconds{op, outcome}  histogram  (redlock.operation.duration, s)
//	redlock_acquire_attempts_total                   counter    (redlock.acquire.attempts)
//	redlock_acquire_contended_total                  counter    (redlock.acquire.contended)
//	redlock_locks_lost_total{op}                     counter    (redlock.locks.lost)
//	redlock_node_errors_total{node, op}              counter    (redlock.node.errors)
//
// op is acquire, extend, keepalive or release; outcome is ok or error;
// node is the node's address as redlock reports it (passwords redacted).
// redlock_locks_lost_total counts operations that found their lock lost or
// expired, by op; it also has op keepalive_end: kept-alive locks that were
// lost or expired, each counted once (OpKeepAliveEnd). The extension that
// found a kept-alive lock lost, if one did, is counted under its own op
// (keepalive, or extend for the holder's), so a sum over op counts such a
// lock twice: alert on op="keepalive_end" for kept-alive locks.
// The per-operation instruments are resolved once, at construction, so
// recording an operation does no label lookup.
//
// Use: o, err := observe.NewPrometheus(prometheus.DefaultRegisterer, "app")
// then redlock.New(addrs, redlock.WithObserver(o)); or observe.NewOTel with
// a metric.Meter from your MeterProvider.
package observe
