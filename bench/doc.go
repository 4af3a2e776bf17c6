// Package bench is the Redlock benchmark behind cmd/redmux-bench: the
// command line (flags.go holds every flag type), the strategies it
// compares, the targets (embedded fake cluster, child process, real
// servers), the orchestration of runs, sweeps, merges and comparisons, and
// the files they write (the HdrHistogram interval logs among them). The
// reports are package bench/internal/report's: every JSON-tagged type of
// their schema, Read (the one reader of a report file: compare, render,
// -slo-from), the sweep's verdicts, and the writers (terminal table, JSON,
// CSV, Markdown report, capacity sweep, the SVG plots' series).
//
// The load generator (workers driven closed or open loop, latency
// histograms, allocation and CPU accounting) is package bench/load; bench
// creates the workers, hands them to load.Measure with a load.RunConfig,
// and summarises the raw load.Result into a report.StrategyResult. bench uses
// load's names (load.Worker, load.Hold, the metric names, ...) as they are.
//
// # Strategies
//
// Every strategy runs the same Redlock decision logic, redlock's own rules
// (internal/lockrule: Quorum, TTLMillis, Drift, Acquired, QuorumLost; tested
// in algorithm_test.go) (quorum N/2+1,
// validity = ttl - elapsed - (ttl*0.01 + 2ms), release on ALL nodes after a
// failed acquire, compare-and-delete release and compare-and-pexpire extend
// by EVALSHA with an EVAL fallback on NOSCRIPT), and every connection is set
// up by mux's own set-up (nodeaddr.Setup: AUTH, HELLO, SELECT, CLIENT SETNAME and
// SCRIPT LOAD of redlock.MuxScripts in one write, every reply checked), so
// that only the transport differs:
//
//   - seq: one plain blocking connection per node; for each node in turn,
//     write the command and read its reply (the naive loop: the sum of N
//     round trips).
//   - fanout: a goroutine per node per operation, each on its own plain
//     connection, waiting for all of them (as common Go clients do).
//   - mux: package redlock on the multiplexed mux client (all nodes written
//     before any reply is read; decided at quorum).
//
// # Measuring
//
// Closed loop (-c workers as fast as they go) or open loop (-rate: operation
// i is due at start + i/rate and its latency is measured from that intended
// start, so a stall is charged to every operation scheduled during it and
// coordinated omission is not hidden). Latencies are recorded in nanoseconds
// in HdrHistograms covering 1us..60s with 3 significant digits (values below
// 1ms have a resolution of 512ns; values outside the range are clamped to
// it). Every operation lands in exactly one of the acquire, not_acquired and
// failed histograms (failed: latency to the failure), and percentiles use
// HdrHistogram's ceiling rank (ValueAtPercentile), so figures match
// HistogramLogProcessor's on the interval log, which holds every recorded
// value. An open-loop run reports target and achieved rate and is marked
// saturated when it falls behind (the capacity maths then refuses it).
// Allocations per operation come from runtime.MemStats deltas and client
// CPU per operation from getrusage, over the measured window.
//
// Main maps outcomes to exit statuses: 0, 1 (run failure, or most
// operations failed), 2 (usage), 3 (a sweep with -fail-on-breach found a
// breach: ExitBreach), 130 (interrupted: the report for what was measured
// is written, marked interrupted).
//
// By default the embedded fake cluster runs in a child process (the same
// executable, re-run; see ChildMain) so that its CPU time and allocations
// are not counted as the client's; its CPU, like that of local
// redis-servers, is read from /proc as the server cost. Against real Redis,
// INFO commandstats and INFO CPU (used_cpu_user/sys, also of remote nodes)
// are read before and after each strategy and sweep step.
//
// # Using it
//
// Main is the whole command line; Run runs a parsed Config. A program that
// may start the embedded cluster must call ChildMain first in main (and in
// TestMain for tests):
//
//	func main() {
//		bench.ChildMain()
//		os.Exit(bench.Main(os.Args[1:], os.Stdout, os.Stderr, os.Getenv))
//	}
//
// Interval logs from several load-generator machines merge into one summary
// with redmux-bench merge FILE... (logs written and read by
// bench/internal/hlog). The password (-password or REDMUX_PASSWORD) never
// appears in any output, error or file; nor does a -nodes URL's, which may hold
// commas (a comma splits the list only outside a URL's user information), even
// in an error about a malformed address. A password on the command line gets a
// warning (passwordWarning): ps shows it to other users.
//
// Reports (summary.json and sweep.json's env.build, report.md, the interval
// logs' header) name the build as -version does (versionString): under go run,
// which stamps no VCS revision, it is read from git at run time.
package bench
