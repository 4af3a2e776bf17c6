package bench

import (
	"flag"
	"io"
	"time"

	"github.com/redmux/redmux/bench/load"
)

// newFlagSet defines the flags of a run (sweep: of redmux-bench sweep) on c
// and the parser's own nodes, strategy and fault list.
func newFlagSet(c *Config, faults *faultList, nodes, strategy *string, sweep bool) *flag.FlagSet {
	fs := flag.NewFlagSet("redmux-bench", flag.ContinueOnError)
	c.Sweep = sweep
	fs.SetOutput(io.Discard)
	fs.StringVar(nodes, "nodes", "", "comma-separated `list` of real Redis masters (no embedded cluster): host:port, or redis://[[user]:password@]host[:port][/db] and rediss://... URLs (mux.Config.Addrs documents their options)")
	fs.IntVar(&c.Fake, "fake", 5, "embedded fake cluster size (`N` nodes), when -nodes and -real-local are not set")
	fs.IntVar(&c.RealLocal, "real-local", 0, "start `N` local redis-server processes on free loopback ports, benchmark them, stop them")
	fs.StringVar(&c.Shape, "shape", shapeStandalone, "with -real-local, what each node is: standalone (one redis-server), cluster (a Redis Cluster of -shards primaries, a redis-cluster:// node) or sentinel (a primary, a replica and 3 sentinels, a redis-sentinel:// node); cluster and sentinel run -strategy mux only")
	fs.IntVar(&c.Shards, "shards", 3, "with -shape cluster: primaries of each cluster node (1..16)")
	fs.StringVar(strategy, "strategy", "all", "seq|fanout|mux|all, or a comma-separated list")
	fs.IntVar(&c.Workers, "c", 16, "concurrent workers")
	fs.Var(transportFlag{&c.Transport}, "transport", "mux strategy: how its connections are driven on Linux: auto (mux's default: epoll with a 1ms direct wait), epoll (no direct wait unless -direct-wait), or io_uring (a lone caller's sends and its wait are one system call; a run fails when the kernel refuses io_uring)")
	fs.DurationVar(&c.DirectWait, "direct-wait", 0, "mux strategy: mux.Config.DirectWait, how long a lone caller blocks in the kernel for its replies before parking (fewer system calls; measure it on your machines); 0 = mux's default (1ms on auto's epoll and on io_uring, off on -transport epoll)")
	fs.IntVar(&c.Conns, "conns", 0, "mux strategy: connections per node, shared by every worker (commands of concurrent workers are pipelined on them); 0 = mux's default (1)")
	durationVar(fs, &c.Duration, "d", 5*time.Second, "measured `duration` per strategy")
	fs.Int64Var(&c.Ops, "n", 0, "measured operations per strategy (instead of -d)")
	durationVar(fs, &c.Warmup, "warmup", 500*time.Millisecond, "unrecorded warm-up per strategy")
	fs.IntVar(&c.Keys, "keys", 10000, "key space size; 1 = every worker fights for one lock (default 10000; 1 with -workload contended)")
	durationVar(fs, &c.TTL, "ttl", 10*time.Second, "lock time to live")
	durationVar(fs, &c.Timeout, "timeout", 50*time.Millisecond, "per-node timeout")
	fs.Float64Var(&c.Rate, "rate", 0, "open loop: target operations/s over all workers, latency measured from each operation's intended start (0 = closed loop)")
	fs.StringVar(&c.Workload, "workload", load.WorkloadAcquireRelease, "acquire-release|acquire-extend-release|contended|fenced (fenced: mux only, with fencing tokens)")
	c.KeyDist = load.KeyDist{Kind: load.KeysRoundRobin}
	fs.Var(holdFlag{&c.Hold}, "hold", "time each acquired lock is held before its release: a `duration` (5ms), uniform:<min>:<max> or exp:<mean> (0 = release at once)")
	fs.Var(keyDistFlag{&c.KeyDist}, "keys-dist", "key popularity `DIST`: round-robin (each worker its own keys), uniform, or zipf:<s> with s > 1 (zipf:1.1: a few hot keys; workers then contend)")
	fs.StringVar(&c.User, "user", "", "ACL user for AUTH")
	fs.StringVar(&c.Password, "password", "", "AUTH password; never printed, but visible to other users in ps (a warning says so): prefer $"+envPassword)
	fs.IntVar(&c.DB, "db", 0, "SELECT this database")
	fs.StringVar(&c.JSON, "json", "", "write the summary as JSON to `FILE` (- = stdout; the table then goes to stderr)")
	fs.StringVar(&c.CSV, "csv", "", "write one CSV row per strategy and metric to `FILE` (- = stdout; the table then goes to stderr)")
	fs.Var(percentileList{&c.Percentiles}, "percentiles", "`LIST` of percentiles for the table, CSV and report, e.g. 50,90,99,99.9 (default: table 50,99,99.9, report 50,90,99,99.9,99.99)")
	fs.StringVar(&c.Hlog, "hlog", "", "write an HdrHistogram interval log to `FILE`")
	fs.StringVar(&c.Out, "out", defaultOut, "report `DIR`: report.md, summary.json, bench.hlog, percentiles.svg (\"\" = none); a DIR given that exists and is not empty is refused before the run, unless -force (the default DIR is written over)")
	fs.BoolVar(&c.Force, "force", false, "write the report into an -out DIR that is not empty (its files of the same names are replaced)")
	durationVar(fs, &c.Latency, "latency", 0, "reply latency added to every embedded node, e.g. 1ms")
	fs.Var(faults, "fault", "embedded cluster `FAULT`, repeatable: slow:<node>:<latency>[:<jitter>], down:<node>, blackhole:<node>, cap:<node>:<commands/s> (nodes 0-based)")
	fs.Float64Var(&c.NodeCap, "node-cap", 0, "embedded cluster: every node serves at most this many `commands/s` (a lock operation is 2 commands per node), as a single-threaded server; plants a capacity knee (0 = none)")
	fs.BoolVar(&c.InProcess, "inprocess", false, "run the embedded cluster inside this process (allocs and CPU per op then include the server's)")
	fs.BoolVar(&c.FreshNodes, "fresh-nodes", false, "the -nodes were just started and hold no lock: the mux strategy's lock trusts them at once (else it quarantines a node up for less than the TTL, as after an undelayed restart, and, at the first use of a set of nodes, one without a data-set marker: docs/OPERATIONS.md)")
	fs.IntVar(&c.ReplicaAcks, "replica-acks", -1, "mux strategy: replica acknowledgements a grant waits for (WAIT; redlock.WithReplicaAcks): -1 = the library's default (a Sentinel node's replicas), 0 = none, N = N on nodes other than Sentinel nodes")
	fs.BoolVar(&c.Quiet, "quiet", false, "no progress line, no table")
	durationVar(fs, &c.Progress, "progress", defaultProgressEvery, "when stderr is not a terminal, a progress line this often (0 = none): % done, ETA, and the average rate since the strategy's start (on a terminal: a live line, the last second's rate)")
	fs.StringVar(&c.Title, "title", "", "report title")
	fs.BoolVar(&c.TLS, "tls", false, "connect to every node over TLS (with -real-local: start TLS-only servers, certificates made for the run); rediss:// nodes use TLS without it")
	fs.StringVar(&c.CACert, "cacert", "", "with -tls: CA certificate `FILE` (PEM) the servers' certificates must chain to (default: the system's)")
	fs.StringVar(&c.Cert, "cert", "", "with -tls: client certificate `FILE` (PEM), for servers that require one")
	fs.StringVar(&c.Key, "key", "", "with -tls: client private key `FILE` (PEM)")
	fs.StringVar(&c.SNI, "sni", "", "with -tls: server `NAME` to send and verify (default: each node's host)")
	fs.BoolVar(&c.Insecure, "insecure", false, "with -tls: do not verify the servers' certificates (testing only)")
	fs.BoolVar(&c.Version, "version", false, "print the version (module version, VCS revision, Go version) and exit")
	fs.Var(startAtFlag{&c.StartAt}, "start-at", "wall-clock `TIME` (RFC 3339, e.g. 2026-11-23T08:00:00Z, or Unix seconds) at which to start, shared by several redmux-bench processes on several machines (clocks in sync, e.g. NTP); strategy i starts at TIME + i*(warmup + d + 2s); merge their -hlog files with redmux-bench merge")
	if !sweep {
		fs.StringVar(&c.MetricsAddr, "metrics-addr", "", "serve the run's live counters (operations ok and failed, node errors, per strategy) and latency histograms in the Prometheus text format at http://`HOST:PORT`/metrics while it runs (e.g. 127.0.0.1:9464; :0 picks a free port, printed)")
		fs.Var(segmentFlag{&c.Segment}, "segment", "`i/n`: run the i-th of n shares (0-based) of one run spread over n processes against one cluster (-nodes), all given the same -start-at: this process runs 1/n of -rate, of -c and (round-robin keys) a contiguous 1/n of -keys; merge their -hlog files with redmux-bench merge (deploy/k8s/redmux-bench-job.yaml)")
	}
	if sweep {
		c.Workers = 64
		fs.Lookup("c").DefValue = "64"
		fs.Lookup("c").Usage = "concurrent workers (open loop: they bound the rate a step can reach, about workers / latency)"
		fs.Lookup("out").DefValue = defaultSweepOut
		c.Out = defaultSweepOut
		fs.Lookup("out").Usage = "report `DIR`: sweep.md, sweep.json, sweep.csv, sweep.svg, sweep.hlog (\"\" = none); a DIR given that exists and is not empty is refused before the run, unless -force (the default DIR is written over)"
		fs.Float64Var(&c.CapacityRate, "capacity-rate", 0, "target lock rate (ops/s) to size: the Provisioning section (client cores, server cores per node, client processes and Redlock groups) and headroom")
		fs.BoolVar(&c.FailOnBreach, "fail-on-breach", false, "exit with status 3 when a strategy's capacity under the objective is below -capacity-rate (without -capacity-rate: when no step held), for CI")
		fs.Var(sloFlag{&c.SLO, &c.SLOAuto}, "slo", "latency objective every step of every strategy must hold, `pP<DURATION`, e.g. p99<2ms or p99.9<5ms, on every operation's latency (failures at their latency to failure), printed first; default "+defaultSLO.String()+", fixed so that two runs are judged by one bar; auto: p99 within 3x of the best strategy's lightest step's (at least +1ms), which moves from run to run")
		fs.Var(sloFromFlag{&c.SLO, &c.SLOAuto, &c.SLOFrom}, "slo-from", "take the objective an earlier sweep was judged by from its sweep.json (`FILE`, or the directory that holds it), e.g. to judge a rerun by a derived (-slo auto) objective")
		fs.Var(rateList{&c.Rates}, "rates", "comma-separated open-loop `RATES` (ops/s) to step through, e.g. 500,1000,2000 (default: from a closed-loop probe)")
		durationVar(fs, &c.Step, "step", 2*time.Second, "measured `duration` of each step (after -warmup at the step's rate)")
		fs.IntVar(&c.Steps, "steps", 10, "coarse steps, evenly spaced up to the probe's closed-loop rate, then 10% beyond it (and on at that spacing while steps hold, up to 3x the probe)")
		fs.IntVar(&c.Refine, "refine", 2, "extra bisection steps between the last step that held and the first that did not")
	}
	return fs
}
