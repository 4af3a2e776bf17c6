// Package load is redmux-bench's load generator: it drives a strategy's
// workers (Worker) closed loop or open loop (RunConfig), records every
// operation's latency in HdrHistograms (one per metric, Metrics), and
// accounts the process's allocations and CPU time over the measured
// window. Measure runs one warm-up and one measured phase and returns the
// raw figures (Result); package bench creates the workers, summarises a
// Result into its report schema (bench/internal/report: load has no JSON types
// of its own) and writes the reports.
//
// The API is narrow: RunConfig, Progress, Worker, IntervalLog, Measure and
// Result; the workload's parameters (Hold, KeyDist and their parsers);
// and the histogram helpers bench reports with (NewHistogram, Record,
// ValueAtPercentile, ValuesAtPercentiles, Hists and the metric indexes).
//
// Closed loop, each worker starts its next operation when the previous one
// ends. Open loop (RunConfig.Rate), operation i is due at start + i/rate
// and its latency is measured from that intended start, so a stall is
// charged to every operation scheduled during it (no coordinated
// omission). Each worker records into its own small buffer, flushed into
// one shared set of interval histograms when full (hist.go); a collector
// drains the buffers once per interval and passes the interval's
// histograms to the totals, the interval log (IntervalLog) and a Progress
// snapshot, and leaves its own allocations out of the window's. The
// harness's own CPU time (the collector's, measured, and the load loop's,
// calibrated per operation: harness.go) is reported apart
// (Result.HarnessNs). Errors are named by RunConfig.Classify.
//
// load imports no other package of the module.
package load
