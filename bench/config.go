package bench

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redmux/redmux/bench/load"
	"github.com/redmux/redmux/mux"
)

// envPassword is the environment variable read for the password when
// -password is not given.
const envPassword = "REDMUX_PASSWORD"

// defaultOut is the report directory of a run without -out (relative to the
// working directory; `make run` runs from the repository root).
const defaultOut = "results/latest"

// ErrUsage matches every *usageError.
var ErrUsage = errors.New("usage error")

// usageError is bad command-line input (exit status 2).
type usageError struct{ Msg string }

func (e *usageError) Error() string        { return e.Msg }
func (e *usageError) Is(target error) bool { return target == ErrUsage }

func usagef(format string, a ...any) error { return &usageError{Msg: fmt.Sprintf(format, a...)} }

// Fault is one injected fault of the embedded cluster (-fault).
type Fault struct {
	Kind   string        // "slow", "down", "blackhole" or "cap"
	Node   int           // node index, 0-based
	Fixed  time.Duration // slow: added reply latency
	Jitter time.Duration // slow: extra uniform [0, Jitter)
	Rate   float64       // cap: commands per second the node serves
}

func (f Fault) String() string {
	s := f.Kind + ":" + strconv.Itoa(f.Node)
	if f.Kind == "cap" {
		return s + ":" + strconv.FormatFloat(f.Rate, 'f', -1, 64)
	}
	if f.Kind == "slow" {
		s += ":" + f.Fixed.String()
		if f.Jitter > 0 {
			s += ":" + f.Jitter.String()
		}
	}
	return s
}

// ParseFault parses "slow:<node>:<latency>[:<jitter>]", "down:<node>",
// "blackhole:<node>" or "cap:<node>:<commands/s>" (node indexes are
// 0-based).
func ParseFault(s string) (Fault, error) {
	p := strings.Split(s, ":")
	bad := func(why string) (Fault, error) {
		return Fault{}, fmt.Errorf("bad -fault %q: %s (want slow:<node>:<latency>[:<jitter>], down:<node>, blackhole:<node> or cap:<node>:<commands/s>)", s, why)
	}
	if len(p) < 2 {
		return bad("missing node")
	}
	f := Fault{Kind: p[0]}
	n, err := strconv.Atoi(p[1])
	if err != nil || n < 0 {
		return bad("node must be an index >= 0")
	}
	f.Node = n
	switch f.Kind {
	case "down", "blackhole":
		if len(p) != 2 {
			return bad("too many fields")
		}
	case "cap":
		if len(p) != 3 {
			return bad("cap needs a rate in commands per second")
		}
		if f.Rate, err = strconv.ParseFloat(p[2], 64); err != nil || !(f.Rate > 0 && f.Rate <= 1e9) {
			return bad("bad rate (commands per second, > 0)")
		}
	case "slow":
		if len(p) < 3 || len(p) > 4 {
			return bad("slow needs a latency")
		}
		if f.Fixed, err = time.ParseDuration(p[2]); err != nil || f.Fixed < 0 {
			return bad("bad latency")
		}
		if len(p) == 4 {
			if f.Jitter, err = time.ParseDuration(p[3]); err != nil || f.Jitter < 0 {
				return bad("bad jitter")
			}
		}
	default:
		return bad("unknown kind " + strconv.Quote(f.Kind))
	}
	return f, nil
}

// Config is a parsed command line.
type Config struct {
	Nodes        []string      // -nodes: real masters (no embedded cluster)
	Fake         int           // -fake: embedded cluster size
	RealLocal    int           // -real-local: start this many local redis-servers
	Shape        string        // -shape: what each -real-local node is (shapeStandalone, shapeCluster, shapeSentinel)
	Shards       int           // -shards: primaries of each -shape cluster node
	Strategies   []string      // -strategy
	Workers      int           // -c
	Conns        int           // -conns (mux: connections per node; 0 = mux default)
	DirectWait   time.Duration // -direct-wait (mux.Config.DirectWait; 0 = off)
	Transport    mux.Transport // -transport (mux.Config.Transport)
	Duration     time.Duration // -d
	Ops          int64         // -n
	Warmup       time.Duration // -warmup
	Keys         int           // -keys
	TTL          time.Duration // -ttl
	Timeout      time.Duration // -timeout (per node)
	Rate         float64       // -rate
	Workload     string        // -workload
	Hold         load.Hold     // -hold: time inside the lock
	KeyDist      load.KeyDist  // -keys-dist
	User         string        // -user
	Password     string        // -password or REDMUX_PASSWORD; never printed
	DB           int           // -db
	JSON         string        // -json ("-" = stdout)
	CSV          string        // -csv ("-" = stdout)
	Percentiles  []float64     // -percentiles (nil = the reports' defaults)
	Hlog         string        // -hlog
	Out          string        // -out ("" = no report directory)
	Latency      time.Duration // -latency (embedded cluster)
	Faults       []Fault       // -fault (embedded cluster)
	InProcess    bool          // -inprocess: embedded cluster in this process
	FreshNodes   bool          // -fresh-nodes: trust the -nodes at first sight (redlock.WithTrustNodesAtStart)
	NodeCap      float64       // -node-cap (embedded cluster): commands/s per node
	CapacityRate float64       // -capacity-rate (sweep)
	Quiet        bool          // -quiet
	Progress     time.Duration // -progress: progress line interval off a terminal (0 = none)
	Title        string        // -title (report heading)
	TLS          bool          // -tls: every node over TLS
	CACert       string        // -cacert: CA bundle (PEM) the servers' certificates must chain to
	Cert, Key    string        // -cert, -key: client certificate and key (PEM), for servers that require one
	SNI          string        // -sni: server name to send and check (default: each node's host)
	Insecure     bool          // -insecure: do not verify the servers' certificates
	// StartAt is -start-at: the wall-clock time the first strategy's
	// warm-up starts (zero: at once). Strategy i starts at StartAt +
	// i*(Warmup + Duration + startAtGap), so several redmux-bench processes
	// given the same time measure in the same windows.
	StartAt time.Time
	// Segment is -segment i/n (zero: the whole run in this process). Once
	// parsed, Workers, Rate and Keys are this process's share, KeyFirst
	// its first key, and SegmentOf holds the whole run's figures.
	Segment   Segment
	KeyFirst  int
	SegmentOf SegmentInfo

	// Sweep settings (redmux-bench sweep only).
	Sweep  bool          // the sweep subcommand
	SLO    *SLO          // -slo (nil: one automatic objective for every strategy, from the best strategy's lightest step)
	Rates  []float64     // -rates (nil: steps from a closed-loop probe)
	Step   time.Duration // -step: measured time per step
	Steps  int           // -steps: coarse steps up to the probe's rate
	Refine int           // -refine: bisection steps between the last good and first bad step
	// FailOnBreach (-fail-on-breach): exit with ExitBreach when a strategy
	// did not hold -capacity-rate (without it: when no step held).
	FailOnBreach bool

	// Command is the command line as given, with the password replaced.
	Command string

	// Version is -version: print the version (versionString()) and exit 0.
	Version bool
	// Force is -force: write into an -out directory that is not empty.
	// OutSet: -out was given (the default directory, results/latest, is
	// the previous run's by its name and is written over without -force).
	Force, OutSet bool
}

// startAtGap separates the windows of consecutive strategies under
// -start-at (their set-up and tear-down fit in it).
const startAtGap = 2 * time.Second

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
	fs.Var(transportFlag{&c.Transport}, "transport", "mux strategy: how its connections are driven on Linux: epoll (mux's default) or io_uring (a lone caller's sends and its wait are one system call; a run fails when the kernel refuses io_uring)")
	fs.DurationVar(&c.DirectWait, "direct-wait", 0, "mux strategy: mux.Config.DirectWait, how long a lone caller blocks in epoll_pwait2 for its replies before parking (fewer system calls; measure it on your machines); 0 = off, mux's default")
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
	fs.BoolVar(&c.FreshNodes, "fresh-nodes", false, "the -nodes were just started and hold no lock: the mux strategy's lock trusts them at once (else it quarantines a node up for less than the TTL, as after an undelayed restart: docs/OPERATIONS.md)")
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
		fs.Var(sloFlag{&c.SLO}, "slo", "latency objective every step must hold, `pP<DURATION`, e.g. p99<2ms or p99.9<5ms, on every operation's latency (failures at their latency to failure); default one objective for every strategy: p99 within 3x of the best strategy's lightest step's (at least +1ms), printed first")
		fs.Var(rateList{&c.Rates}, "rates", "comma-separated open-loop `RATES` (ops/s) to step through, e.g. 500,1000,2000 (default: from a closed-loop probe)")
		durationVar(fs, &c.Step, "step", 2*time.Second, "measured `duration` of each step (after -warmup at the step's rate)")
		fs.IntVar(&c.Steps, "steps", 10, "coarse steps, evenly spaced up to the probe's closed-loop rate, then 10% beyond it (and on at that spacing while steps hold, up to 3x the probe)")
		fs.IntVar(&c.Refine, "refine", 2, "extra bisection steps between the last step that held and the first that did not")
	}
	return fs
}

// writeUsage writes the flag documentation.
func writeUsage(w io.Writer) {
	var c Config
	var f faultList
	var a, b string
	fs := newFlagSet(&c, &f, &a, &b, false)
	fs.SetOutput(w)
	fmt.Fprintf(w, `redmux-bench: Redlock acquire/release latency and throughput, strategies side by side.

Usage:
  redmux-bench [flags]            benchmark (default: embedded 5-node fake cluster, every strategy)
  redmux-bench sweep [flags]      capacity: open-loop steps of rising rate up to saturation (redmux-bench sweep -h)
  redmux-bench merge FILE...      merge HdrHistogram interval logs from several machines (-segment i/n splits one run between them)
  redmux-bench compare OLD NEW    per-metric ratios of two results, changes beyond the noise flagged (redmux-bench compare -h)

Flags, by group:
`)
	printFlags(w, fs)
	fmt.Fprintf(w, `
Exit status: 0 ok, 1 run failure (unreachable node, wrong password, ...), 2 usage error (or a non-empty -out without -force).
`)
}

// sweepUsage writes the flag documentation of redmux-bench sweep.
func sweepUsage(w io.Writer) {
	var c Config
	var f faultList
	var a, b string
	fs := newFlagSet(&c, &f, &a, &b, true)
	fs.SetOutput(w)
	fmt.Fprintf(w, `redmux-bench sweep: how many lock operations/s the target takes before latency breaks an objective.

For each strategy: a closed-loop probe (skipped with -rates) and its lightest
step; then one objective for every strategy (-slo, or derived from the best
strategy's lightest step); then open-loop steps of rising rate, each warmed up
at its rate (-warmup) and measured for -step, until a step saturates or two in
a row miss the objective (a step that misses the objective or does not keep
up is run once more first); then -refine bisection steps. The capacity is the
highest rate that held; -capacity-rate sizes a target from it (Provisioning).
Writes sweep.md (capacity report), sweep.json, sweep.csv, sweep.svg
(latency against throughput) and sweep.hlog to -out.

Usage:
  redmux-bench sweep [flags]

Flags, by group (-d, -n, -rate and -hlog are the single run's; a sweep sets its own):
`)
	printFlags(w, fs)
	fmt.Fprintf(w, `
Example: redmux-bench sweep -fake 5 -latency 1ms -strategy mux -slo 'p99<5ms'
Exit status: 0 ok, 1 run failure, 2 usage error, 3 breach (-fail-on-breach),
130 interrupted.
`)
}

// ParseArgs parses the command line (without the program name). getenv
// supplies REDMUX_PASSWORD. Bad input gives a *usageError; -h gives
// flag.ErrHelp. No error carries the password, however it was given (the
// environment, or -password before or after the offending flag).
func ParseArgs(args []string, getenv func(string) string) (*Config, error) {
	return parseArgsMode(args, getenv, false)
}

// parseSweepArgs parses the command line of redmux-bench sweep (the
// arguments after "sweep"); errors as ParseArgs.
func parseSweepArgs(args []string, getenv func(string) string) (*Config, error) {
	return parseArgsMode(args, getenv, true)
}

func parseArgsMode(args []string, getenv func(string) string, sweep bool) (*Config, error) {
	c, err := parseArgs(args, getenv, sweep)
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return c, err
	}
	msg := err.Error()
	for _, pw := range passwordsIn(args, getenv) {
		msg = redact(msg, pw)
	}
	return nil, &usageError{Msg: msg}
}

// passwordsIn returns every password a command line may carry: the
// environment's and each -password flag's value (the parser may stop
// before it reaches them).
func passwordsIn(args []string, getenv func(string) string) []string {
	var out []string
	if getenv != nil {
		if pw := getenv(envPassword); pw != "" {
			out = append(out, pw)
		}
	}
	urls := func(list string) {
		for _, a := range splitNodes(list) {
			out = append(out, nodeSecrets(strings.TrimSpace(a))...)
		}
	}
	for i, a := range args {
		switch {
		case a == "-nodes" || a == "--nodes":
			if i+1 < len(args) {
				urls(args[i+1])
			}
		case strings.HasPrefix(a, "-nodes=") || strings.HasPrefix(a, "--nodes="):
			urls(a[strings.IndexByte(a, '=')+1:])
		case a == "-password" || a == "--password":
			if i+1 < len(args) && args[i+1] != "" {
				out = append(out, args[i+1])
			}
		case strings.HasPrefix(a, "-password=") || strings.HasPrefix(a, "--password="):
			if v := a[strings.IndexByte(a, '=')+1:]; v != "" {
				out = append(out, v)
			}
		}
	}
	return out
}

func parseArgs(args []string, getenv func(string) string, sweep bool) (*Config, error) {
	c := &Config{}
	var faults faultList
	var nodes, strategy string
	fs := newFlagSet(c, &faults, &nodes, &strategy, sweep)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, flag.ErrHelp
		}
		return nil, &usageError{Msg: err.Error()}
	}
	if fs.NArg() > 0 {
		return nil, usagef("unexpected argument %q", fs.Arg(0))
	}
	if c.Version {
		return c, nil // nothing else is checked: the command prints the version and exits
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	c.Faults = faults
	c.OutSet = set["out"]
	if c.Password == "" && getenv != nil {
		c.Password = getenv(envPassword)
	}
	c.Command = commandLine(args)
	if sweep {
		c.Command = commandLine(append([]string{"sweep"}, args...))
		if err := checkSweepFlags(c, set); err != nil {
			return nil, err
		}
	}

	if err := parseNodes(c, nodes); err != nil {
		return nil, err
	}
	if err := checkTLS(c, set); err != nil {
		return nil, err
	}
	if err := checkRanges(c, set); err != nil {
		return nil, err
	}
	if err := checkWorkload(c, set); err != nil {
		return nil, err
	}
	if err := checkShape(c, set); err != nil {
		return nil, err
	}
	if err := parseStrategies(c, strategy); err != nil {
		return nil, err
	}
	if err := applySegment(c); err != nil {
		return nil, err
	}
	return c, nil
}

// checkSweepFlags refuses the flags a sweep sets itself or does not take.
func checkSweepFlags(c *Config, set map[string]bool) error {
	switch {
	case set["rate"]:
		return usagef("sweep sets the rate of each step itself; give the steps with -rates")
	case set["d"] || set["n"]:
		return usagef("sweep steps last -step each (-d and -n are for a single run)")
	case c.Step <= 0:
		return usagef("-step must be positive, got %v", c.Step)
	case c.Steps < 2 || c.Steps > 100:
		return usagef("-steps must be 2..100, got %d", c.Steps)
	case c.Refine < 0 || c.Refine > 10:
		return usagef("-refine must be 0..10, got %d", c.Refine)
	case c.JSON == "-" && c.CSV == "-":
		return usagef("-json - and -csv - both want stdout; send one to a file")
	case c.Hlog != "":
		return usagef("sweep writes its interval log to -out DIR (sweep.hlog); -hlog is for a single run")
	}
	return nil
}

// parseNodes checks -nodes and sets c.Nodes. The list is split as
// splitNodes splits it (a comma in a URL's password does not split); no
// error quotes a password (checkNode).
func parseNodes(c *Config, nodes string) error {
	if nodes != "" {
		for _, a := range splitNodes(nodes) {
			a = strings.TrimSpace(a)
			if err := checkNode(a); err != nil {
				return err
			}
			c.Nodes = append(c.Nodes, a)
		}
	}
	return nil
}

// checkTLS checks the TLS flags against each other and the nodes.
func checkTLS(c *Config, set map[string]bool) error {
	tlsFlag := set["cacert"] || set["cert"] || set["key"] || set["sni"] || set["insecure"]
	switch {
	case tlsFlag && !c.TLS:
		return usagef("-cacert, -cert, -key, -sni and -insecure need -tls (a rediss:// node takes cacert=, cert=, key=, sni=, insecure= in its URL)")
	case c.TLS && len(c.Nodes) == 0 && c.RealLocal == 0:
		return usagef("-tls needs -nodes or -real-local: the embedded fake cluster speaks no TLS")
	case c.RealLocal > 0 && (set["cacert"] || set["cert"] || set["key"]):
		return usagef("-real-local -tls makes its own certificates; -cacert, -cert and -key are for -nodes")
	case (c.Cert == "") != (c.Key == ""):
		return usagef("-cert and -key go together")
	}
	for _, a := range c.Nodes {
		if c.TLS && strings.HasPrefix(a, "redis://") {
			return usagef("-tls with a redis:// (plaintext) node %s: write rediss://, or host:port", mux.RedactURL(a))
		}
	}
	return nil
}

// checkRanges checks the target flags against each other and every
// number against its range.
func checkRanges(c *Config, set map[string]bool) error {
	external := len(c.Nodes) > 0 || c.RealLocal > 0
	switch {
	case len(c.Nodes) > 0 && c.RealLocal > 0:
		return usagef("-nodes and -real-local are exclusive")
	case external && set["fake"]:
		return usagef("-fake is for the embedded cluster; it cannot be combined with -nodes or -real-local")
	case external && (len(c.Faults) > 0 || c.Latency != 0 || c.InProcess || c.NodeCap != 0):
		return usagef("-fault, -latency, -node-cap and -inprocess apply to the embedded cluster only")
	case c.NodeCap < 0 || c.NodeCap > 1e9:
		return usagef("-node-cap must be 0..1e9 commands/s, got %g", c.NodeCap)
	case c.Fake < 1 || c.Fake > 64:
		return usagef("-fake must be 1..64, got %d", c.Fake)
	case c.RealLocal < 0 || c.RealLocal > 64:
		return usagef("-real-local must be 1..64, got %d", c.RealLocal)
	case len(c.Nodes) > 64:
		return usagef("at most 64 nodes, got %d", len(c.Nodes))
	case c.Conns < 0 || c.Conns > mux.MaxConns:
		return usagef("-conns must be 0..%d, got %d", mux.MaxConns, c.Conns)
	case c.DirectWait < 0 || c.DirectWait > time.Second:
		return usagef("-direct-wait must be 0..1s, got %v", c.DirectWait)
	case c.Workers < 1 || c.Workers > 100000:
		return usagef("-c must be 1..100000, got %d", c.Workers)
	case set["d"] && set["n"]:
		return usagef("-d and -n are exclusive")
	case set["n"] && c.Ops <= 0:
		return usagef("-n must be positive, got %d", c.Ops)
	case !set["n"] && c.Duration <= 0:
		return usagef("-d must be positive, got %v", c.Duration)
	case c.Progress < 0:
		return usagef("-progress must not be negative")
	case c.Warmup < 0:
		return usagef("-warmup must not be negative")
	case c.Keys < 1 || c.Keys > 10_000_000:
		return usagef("-keys must be 1..10000000, got %d", c.Keys)
	case c.TTL < time.Millisecond:
		return usagef("-ttl must be at least 1ms, got %v", c.TTL)
	case c.Timeout <= 0:
		return usagef("-timeout must be positive, got %v", c.Timeout)
	case c.Rate < 0:
		return usagef("-rate must not be negative")
	case c.Latency < 0:
		return usagef("-latency must not be negative")
	case c.DB < 0:
		return usagef("-db must not be negative")
	case c.CapacityRate < 0:
		return usagef("-capacity-rate must not be negative")
	case c.JSON == "-" && c.CSV == "-":
		return usagef("-json - and -csv - both want stdout; send one to a file")
	case !c.StartAt.IsZero() && set["n"]:
		return usagef("-start-at needs -d (every process's strategies then run in the same windows), not -n")
	case !c.StartAt.IsZero() && !c.StartAt.After(time.Now()):
		return usagef("-start-at %s has passed (now %s)", c.StartAt.UTC().Format(time.RFC3339), time.Now().UTC().Format(time.RFC3339))
	case !c.StartAt.IsZero() && c.StartAt.After(time.Now().Add(24*time.Hour)):
		return usagef("-start-at %s is more than 24h away", c.StartAt.UTC().Format(time.RFC3339))
	}
	return nil
}

// checkWorkload checks -workload and -fault, and applies the defaults they
// imply (-keys 1 when contended, no duration under -n).
func checkWorkload(c *Config, set map[string]bool) error {
	switch c.Workload {
	case load.WorkloadAcquireRelease, load.WorkloadAcquireExtendRelease, load.WorkloadFenced:
	case load.WorkloadContended:
		if !set["keys"] {
			c.Keys = 1
		}
	default:
		return usagef("unknown -workload %q (want acquire-release, acquire-extend-release, contended or fenced)", c.Workload)
	}
	if set["n"] {
		c.Duration = 0
	}
	for _, f := range c.Faults {
		if f.Node >= c.Fake {
			return usagef("-fault %s: node %d does not exist (the cluster has nodes 0..%d)", f, f.Node, c.Fake-1)
		}
	}
	return nil
}

// The deployment shapes of -real-local nodes (-shape).
const (
	shapeStandalone = "standalone"
	shapeCluster    = "cluster"
	shapeSentinel   = "sentinel"
)

// checkShape checks -shape and -shards.
func checkShape(c *Config, set map[string]bool) error {
	switch {
	case c.Shape != shapeStandalone && c.Shape != shapeCluster && c.Shape != shapeSentinel:
		return usagef("-shape %q: want standalone, cluster or sentinel", c.Shape)
	case set["shape"] && c.RealLocal == 0:
		return usagef("-shape is for -real-local (with -nodes, give redis-cluster:// or redis-sentinel:// URLs)")
	case c.Shape != shapeStandalone && c.TLS:
		return usagef("-shape %s: cluster and Sentinel nodes are plaintext (TLS to them is not supported yet)", c.Shape)
	case set["shards"] && c.Shape != shapeCluster:
		return usagef("-shards is for -shape cluster")
	case c.Shards < 1 || c.Shards > mux.MaxClusterShards:
		return usagef("-shards must be 1..%d, got %d", mux.MaxClusterShards, c.Shards)
	}
	return nil
}

// parseStrategies sets c.Strategies from -strategy.
func parseStrategies(c *Config, strategy string) error {
	for _, s := range strings.Split(strategy, ",") {
		switch s = strings.TrimSpace(s); s {
		case "all":
			if c.Workload == load.WorkloadFenced || c.Shape != shapeStandalone {
				// mux is the only one with fencing tokens, and with
				// cluster and Sentinel nodes (seq and fanout dial fixed
				// addresses)
				c.Strategies = append(c.Strategies, strategyMux)
				continue
			}
			c.Strategies = append(c.Strategies, allStrategies...)
		case strategySeq, strategyFanout:
			if c.Workload == load.WorkloadFenced {
				return usagef("-workload fenced runs -strategy mux only (seq and fanout have no fencing tokens)")
			}
			if c.Shape != shapeStandalone {
				return usagef("-shape %s runs -strategy mux only (seq and fanout dial fixed addresses)", c.Shape)
			}
			c.Strategies = append(c.Strategies, s)
		case strategyMux:
			c.Strategies = append(c.Strategies, s)
		default:
			return usagef("unknown -strategy %q (want seq, fanout, mux or all)", s)
		}
	}
	return nil
}

// commandLine renders args as a shell command, with any password replaced
// (-password's value, and the password of every URL in -nodes).
func commandLine(args []string) string {
	out := []string{"redmux-bench"}
	hide, nodes := false, false
	for _, a := range args {
		switch {
		case hide:
			a, hide = "***", false
		case nodes:
			a, nodes = hideURLPasswords(a), false
		case a == "-password" || a == "--password":
			hide = true
		case strings.HasPrefix(a, "-password=") || strings.HasPrefix(a, "--password="):
			a = a[:strings.IndexByte(a, '=')+1] + "***"
		case a == "-nodes" || a == "--nodes":
			nodes = true
		case strings.HasPrefix(a, "-nodes=") || strings.HasPrefix(a, "--nodes="):
			a = a[:strings.IndexByte(a, '=')+1] + hideURLPasswords(a[strings.IndexByte(a, '=')+1:])
		}
		out = append(out, shellQuote(a))
	}
	return strings.Join(out, " ")
}

// hideURLPasswords replaces the password of every URL in a -nodes list by
// ***, keeping the rest (options included) as given.
func hideURLPasswords(list string) string {
	parts := splitNodes(list)
	for i, a := range parts {
		k := strings.Index(a, "://")
		at := strings.LastIndex(a, "@")
		if k < 0 || at < k {
			continue
		}
		if c := strings.Index(a[k+3:at], ":"); c >= 0 {
			parts[i] = a[:k+3+c+1] + "***" + a[at:]
		}
	}
	for i, a := range parts {
		// What a malformed address may show of a password (its run
		// fails before it is recorded, but a usage error may print it).
		if strings.Contains(a, "://") && suspectPort(a) != "" || !strings.Contains(a, "://") && strings.Contains(a, "@") {
			parts[i] = shownNode(a)
		}
	}
	return strings.Join(parts, ",")
}

// transportName is the -transport recorded in the report: empty for
// epoll, mux's default.
func (c *Config) transportName() string {
	if c.Transport == mux.TransportEpoll {
		return ""
	}
	return c.Transport.String()
}

// secrets returns every password the configuration holds: -password's
// and those of -nodes URLs, for scrubbing error texts.
func (c *Config) secrets() []string {
	var out []string
	if c.Password != "" {
		out = append(out, c.Password)
	}
	for _, a := range c.Nodes {
		out = append(out, nodeSecrets(a)...)
	}
	return out
}

// urlEscapedPassword is a URL's password as written (percent-escapes kept).
func urlEscapedPassword(a string) string {
	k := strings.Index(a, "://")
	at := strings.LastIndex(a, "@")
	if k < 0 || at < k {
		return ""
	}
	if c := strings.Index(a[k+3:at], ":"); c >= 0 {
		return a[k+3+c+1 : at]
	}
	return ""
}

// tlsConfig builds the TLS configuration of -tls from -cacert, -cert,
// -key, -sni and -insecure.
func (c *Config) tlsConfig() (*tls.Config, error) {
	tc := &tls.Config{ServerName: c.SNI, InsecureSkipVerify: c.Insecure}
	if c.CACert != "" {
		pool, err := mux.LoadCertPool(c.CACert)
		if err != nil {
			return nil, fmt.Errorf("-cacert: %w", err)
		}
		tc.RootCAs = pool
	}
	if c.Cert != "" {
		kp, err := tls.LoadX509KeyPair(c.Cert, c.Key)
		if err != nil {
			return nil, fmt.Errorf("-cert/-key: %w", err)
		}
		tc.Certificates = []tls.Certificate{kp}
	}
	return tc, nil
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=.,:/+@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// errOutNotEmpty is returned (as a *usageError, before anything runs) for
// an -out directory that exists and is not empty, without -force.
var errOutNotEmpty = errors.New("-out directory not empty")

// checkOut refuses an -out directory given on the command line that
// exists and holds anything, unless -force: a run must not write over
// another's report silently. The default directory (results/latest) is
// the latest run's by name and is written over.
func checkOut(c *Config) error {
	if c.Out == "" || c.Force || !c.OutSet {
		return nil
	}
	names, err := outContents(c.Out)
	if err != nil || len(names) == 0 {
		return err
	}
	return &outError{dir: c.Out, fresh: freshOut(c.Out), names: names}
}

// outNotice is what a run says before it writes over the default -out
// directory (results/latest, not given on the command line) when that
// holds files: the previous run's report is replaced, and how to keep it.
// "" when there is nothing to say.
func outNotice(c *Config) string {
	if c.Out == "" || c.OutSet {
		return ""
	}
	names, err := outContents(c.Out)
	if err != nil || len(names) == 0 {
		return ""
	}
	return fmt.Sprintf("%s holds the previous run's files (%s): they are replaced; give -out %s to keep both",
		c.Out, heldList(names), freshOut(c.Out))
}

// outContents returns up to 3 names in dir (none when it does not exist).
func outContents(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, usagef("-out %s: %v", dir, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, usagef("-out %s: %v", dir, err)
	}
	if !st.IsDir() {
		return nil, usagef("-out %s: not a directory", dir)
	}
	names, err := f.Readdirnames(3)
	if len(names) == 0 && err != nil && !errors.Is(err, io.EOF) {
		return nil, usagef("-out %s: %v", dir, err)
	}
	return names, nil
}

func freshOut(dir string) string {
	return strings.TrimSuffix(dir, "/") + "-" + time.Now().Format("20060102-150405")
}

func heldList(names []string) string {
	held := strings.Join(names, ", ")
	if len(names) == 3 {
		held += ", ..."
	}
	return held
}

type outError struct {
	dir, fresh string
	names      []string
}

func (e *outError) Error() string {
	return fmt.Sprintf("-out %s exists and is not empty (%s): add -force to write over it, or pick a new directory (e.g. -out %s)", e.dir, heldList(e.names), e.fresh)
}

func (e *outError) Is(target error) bool { return target == ErrUsage || target == errOutNotEmpty }
