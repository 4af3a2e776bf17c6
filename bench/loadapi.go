// This file gives the load generator's API (package bench/load) its bench
// names, so that bench's own API is unchanged by the move.

package bench

import (
	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/redmux/redmux/bench/load"
)

// The load shape, the live progress snapshot and the worker interface: see
// package load.
type (
	RunConfig = load.RunConfig
	Progress  = load.Progress
	Worker    = load.Worker
	Hold      = load.Hold
	KeyDist   = load.KeyDist
)

// Workloads (-workload).
const (
	WorkloadAcquireRelease       = load.WorkloadAcquireRelease
	WorkloadAcquireExtendRelease = load.WorkloadAcquireExtendRelease
	WorkloadContended            = load.WorkloadContended
	WorkloadFenced               = load.WorkloadFenced
)

// Key distributions (-keys-dist).
const (
	KeysRoundRobin = load.KeysRoundRobin
	KeysUniform    = load.KeysUniform
	KeysZipf       = load.KeysZipf
)

// Histogram geometry and metric names: see package load.
const (
	HistLowest  = load.HistLowest
	HistHighest = load.HistHighest
	HistDigits  = load.HistDigits

	MetricAcquire        = load.MetricAcquire
	MetricRelease        = load.MetricRelease
	MetricAcquireRelease = load.MetricAcquireRelease
	MetricNotAcquired    = load.MetricNotAcquired
	MetricFailed         = load.MetricFailed
)

// Metrics lists the recorded latencies in report order.
var Metrics = load.Metrics

// NewHistogram returns an empty histogram with the bench geometry.
func NewHistogram() *hdr.Histogram { return load.NewHistogram() }

// ValueAtPercentile is load.ValueAtPercentile: HdrHistogram's ceiling-rank
// percentile, as every figure bench reports uses it.
func ValueAtPercentile(h *hdr.Histogram, p float64) int64 { return load.ValueAtPercentile(h, p) }

// ValuesAtPercentiles is load.ValuesAtPercentiles.
func ValuesAtPercentiles(h *hdr.Histogram, ps []float64) []int64 {
	return load.ValuesAtPercentiles(h, ps)
}

// ParseHold parses -hold (see load.ParseHold).
func ParseHold(s string) (Hold, error) { return load.ParseHold(s) }

// ParseKeyDist parses -keys-dist (see load.ParseKeyDist).
func ParseKeyDist(s string) (KeyDist, error) { return load.ParseKeyDist(s) }
