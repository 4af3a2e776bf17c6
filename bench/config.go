package bench

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/redmux/redmux/bench/internal/report"
	"github.com/redmux/redmux/bench/load"
	"github.com/redmux/redmux/internal/nodeaddr"
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
	ReplicaAcks  int           // -replica-acks: redlock.WithReplicaAcks (-1: the library's default)
	NodeCap      float64       // -node-cap (embedded cluster): commands/s per node
	CapacityRate float64       // -capacity-rate (sweep)
	Quiet        bool          // -quiet
	Progress     time.Duration // -progress: progress line interval off a terminal (0 = none)
	// MetricsAddr is -metrics-addr: HOST:PORT the live view (the run's
	// counters and latency histograms, Prometheus text format) is served
	// on while the run goes; "" = none.
	MetricsAddr string
	Title       string // -title (report heading)
	TLS         bool   // -tls: every node over TLS
	CACert      string // -cacert: CA bundle (PEM) the servers' certificates must chain to
	Cert, Key   string // -cert, -key: client certificate and key (PEM), for servers that require one
	SNI         string // -sni: server name to send and check (default: each node's host)
	Insecure    bool   // -insecure: do not verify the servers' certificates
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
	SegmentOf report.SegmentInfo

	// Sweep settings (redmux-bench sweep only).
	Sweep bool        // the sweep subcommand
	SLO   *report.SLO // -slo or -slo-from (nil: defaultSLO, or with SLOAuto one derived from the best strategy's lightest step)
	// SLOAuto is -slo auto: derive the objective from this run's best
	// lightest step; SLOFrom the -slo-from file the objective came from.
	SLOAuto bool
	SLOFrom string
	Rates   []float64     // -rates (nil: steps from a closed-loop probe)
	Step    time.Duration // -step: measured time per step
	Steps   int           // -steps: coarse steps up to the probe's rate
	Refine  int           // -refine: bisection steps between the last good and first bad step
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
	return nil, &usageError{Msg: passwordsIn(args, getenv).hide(err.Error())}
}

// otherModeFlag says, for a flag the parser did not define (err from Parse),
// that it is a flag of the other command, a run's or sweep's, when it is
// ("" otherwise): Go's message alone reads as if the flag did not exist.
func otherModeFlag(err error, sweep bool) string {
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !ok {
		return ""
	}
	var c Config
	var faults faultList
	var nodes, strategy string
	if newFlagSet(&c, &faults, &nodes, &strategy, !sweep).Lookup(name) == nil {
		return ""
	}
	if sweep {
		return fmt.Sprintf(" (-%s is a flag of a run, redmux-bench -%s ..., not of redmux-bench sweep)", name, name)
	}
	return fmt.Sprintf(" (-%s is a flag of redmux-bench sweep, not of a run)", name)
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
		return nil, &usageError{Msg: err.Error() + otherModeFlag(err, sweep)}
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

	if err := parseNodes(c, nodes, set["nodes"]); err != nil {
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
	if c.MetricsAddr != "" {
		if _, _, err := net.SplitHostPort(c.MetricsAddr); err != nil {
			return nil, usagef("-metrics-addr %q: want HOST:PORT (127.0.0.1:9464; :9464 listens on every interface)", c.MetricsAddr)
		}
	}
	return c, nil
}

// transportName is the -transport recorded in the report: empty for
// auto, mux's default.
func (c *Config) transportName() string {
	if c.Transport == mux.TransportAuto {
		return ""
	}
	return c.Transport.String()
}

// tlsConfig builds the TLS configuration of -tls from -cacert, -cert,
// -key, -sni and -insecure.
func (c *Config) tlsConfig() (*tls.Config, error) {
	tc := &tls.Config{ServerName: c.SNI, InsecureSkipVerify: c.Insecure}
	if c.CACert != "" {
		pool, err := nodeaddr.LoadCertPool(c.CACert)
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
