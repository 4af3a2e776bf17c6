package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redmux/redmux/bench/internal/format"
	"github.com/redmux/redmux/bench/internal/hlog"
	"github.com/redmux/redmux/bench/internal/report"
	"github.com/redmux/redmux/bench/load"
	"github.com/redmux/redmux/internal/nodeaddr"
)

// loadAvg returns the 1-minute load average ("" when unknown).
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// Options are the non-flag inputs of Run.
type Options struct {
	Stdout io.Writer // table (stderr when -json - or -csv - use stdout); nil = discard
	Stderr io.Writer // progress: a live line on a terminal, else a line every ProgressEvery (not with -quiet)
	// Terminal overrides terminal detection of Stderr (tests).
	Terminal *bool
	// ProgressEvery overrides -progress, the interval of progress lines
	// when Stderr is not a terminal (tests).
	ProgressEvery time.Duration
	// liveUp and liveDone, when set, are called with the live view's URL
	// (-metrics-addr) once it is served and after the last strategy, just
	// before it stops (tests).
	liveUp, liveDone func(url string)
}

// defaultProgressEvery is how often a progress line is written when stderr
// is not a terminal (a log file, CI).
const defaultProgressEvery = 5 * time.Second

// Run errors a caller (Main) tells apart with errors.Is. The report, when
// Run returns one with them, has been written.
var (
	// ErrInterrupted: ctx was cancelled (SIGINT); the report covers what
	// was measured and is marked interrupted.
	ErrInterrupted = errors.New("interrupted")
	// ErrMostlyFailed: most operations of a strategy failed; the figures
	// describe failures, not lock latency.
	ErrMostlyFailed = errors.New("most operations failed")
)

// discardUnset sends output with no writer to io.Discard.
func (o *Options) discardUnset() {
	if o.Stdout == nil {
		o.Stdout = io.Discard
	}
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
}

// Run executes a parsed configuration: sets up the target, runs each
// strategy, prints the table and writes the requested files. Errors are run
// failures (exit status 1), except an -out directory refused before the run
// (errOutNotEmpty, a *usageError: exit status 2).
func Run(ctx context.Context, cfg *Config, o Options) (*report.Report, error) {
	o.discardUnset()
	if err := checkOut(cfg); err != nil {
		return nil, err
	}
	if n := outNotice(cfg); n != "" {
		fmt.Fprintln(o.Stderr, "redmux-bench: "+n)
	}
	live, err := startLiveFor(cfg, o)
	if err != nil {
		return nil, err
	}
	defer live.stop(o)
	sess, err := prepare(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer sess.t.close()
	t, params, opt := sess.t, sess.params, sess.opt
	rep := &report.Report{Config: sess.config, Env: sess.env}
	secrets := cfg.secrets()

	var hbuf bytes.Buffer
	comments := []string{"redmux-bench interval log; values in nanoseconds; tags <strategy>.<metric>", cfg.Command, versionString()}
	var prefix [6]byte
	_, _ = rand.Read(prefix[:])
	keyPrefix := "redmux-bench:" + hex.EncodeToString(prefix[:]) + ":"
	if cfg.Segment.IsSet() {
		comments = append(comments, segmentComment(cfg))
		keyPrefix = segmentKeyPrefix(cfg.StartAt)
	}
	hw := hlog.NewWriter(&hbuf, time.Now(), comments...)

	tableOut := o.Stdout
	if cfg.JSON == "-" || cfg.CSV == "-" {
		tableOut = o.Stderr // stdout carries the JSON or CSV
	}
	if !cfg.Quiet {
		// What is about to be measured comes first: a long run does not
		// leave the reader guessing (the table repeats it).
		fmt.Fprintf(tableOut, "measuring: %s; %s\n", report.RunDescription(rep.Config), runPlan(cfg))
	}
	progress := progressFunc(cfg, o)
	for i, name := range cfg.Strategies {
		if ctx.Err() != nil {
			break
		}
		s, err := newStrategy(name, t.addrs, params, cfg.Conns)
		if err != nil {
			return nil, secrets.hideErr(fmt.Errorf("%s: %w", name, err))
		}
		var before, after serverSnap
		res, err := runStrategy(ctx, s, load.RunConfig{
			Workers: cfg.Workers, Duration: cfg.Duration, Ops: cfg.Ops, Warmup: cfg.Warmup,
			Rate: cfg.Rate, Keys: cfg.Keys, KeyFirst: cfg.KeyFirst, Workload: cfg.Workload, Hold: cfg.Hold, KeyDist: cfg.KeyDist, Prefix: keyPrefix, Percentiles: cfg.Percentiles,
			StartAt:       strategyStart(cfg, i),
			BeforeMeasure: func() { before = serverSnapshot(ctx, t, opt) },
			AfterMeasure:  func() { after = serverSnapshot(context.WithoutCancel(ctx), t, opt) },
		}, hw, progress, live.view())
		_ = s.Close()
		if progress != nil {
			progress(load.Progress{}) // clears a terminal's live line
		}
		if err != nil && ctx.Err() == nil {
			return nil, secrets.hideErr(err)
		}
		if res != nil {
			res.Server = serverCost(before, after, res.Ops, len(t.addrs))
			notReadWhy(res.Server, t.addrs)
			nameOutages(res.NodeOutages, rep.Config.Nodes)
			rep.Strategies = append(rep.Strategies, res)
		}
	}
	rep.Interrupted = ctx.Err() != nil
	if len(rep.Strategies) == 0 {
		if rep.Interrupted {
			return nil, fmt.Errorf("%w before any strategy was measured; nothing written", ErrInterrupted)
		}
		return nil, errors.New("no strategy could run")
	}
	rep.Hlog = hbuf.Bytes()
	rep.Env.LoadAvgEnd = loadAvg()
	if !cfg.Quiet {
		report.WriteTable(tableOut, rep)
	}
	if err := writeOutputs(cfg, rep, o.Stdout); err != nil {
		return rep, secrets.hideErr(err)
	}
	if rep.Interrupted {
		return rep, fmt.Errorf("%w: the report covers what was measured (%s)", ErrInterrupted, measuredList(rep))
	}
	for _, s := range rep.Strategies {
		if s.Ops > 0 && s.FailedShare() > 0.5 {
			return rep, fmt.Errorf("%w: %s: %d of %d operations failed (%s; node errors %s)",
				ErrMostlyFailed, s.Name, s.Failed, s.Ops, report.ErrString(s.Errors), report.ErrString(s.NodeErrors))
		}
	}
	return rep, nil
}

// session is a prepared target: nodes up and reachable, faults applied.
type session struct {
	t      *target
	params lockParams
	opt    *connOpts
	config report.ReportConfig
	env    report.Env
}

// driftFactor and driftFixed are the clock drift allowance of every
// strategy's locks: validity = ttl - elapsed - (ttl*driftFactor +
// driftFixed), the Redlock page's and redlock's defaults.
const (
	driftFactor = 0.01
	driftFixed  = 2 * time.Millisecond
)

// prepare sets up the target of cfg (starting the embedded cluster or local
// servers), checks every node, applies -latency, -node-cap and -fault, and
// describes the run. The caller closes sess.t.
func prepare(ctx context.Context, cfg *Config) (*session, error) {
	params := lockParams{
		TTL: cfg.TTL, Timeout: cfg.Timeout, DialTimeout: time.Second,
		DriftFactor: driftFactor, DriftFixed: driftFixed,
		User: cfg.User, Password: cfg.Password, DB: cfg.DB,
		Fencing: cfg.Workload == load.WorkloadFenced, DirectWait: cfg.DirectWait,
		Transport: cfg.Transport, ReplicaAcks: cfg.ReplicaAcks,
	}
	opt := &connOpts{user: cfg.User, password: cfg.Password, db: cfg.DB, dialTimeout: time.Second, timeout: cfg.Timeout}
	secrets := cfg.secrets()

	var t *target
	var err error
	switch {
	case len(cfg.Nodes) > 0:
		t = &target{addrs: cfg.Nodes, kind: "nodes", desc: fmt.Sprintf("%d Redis masters given with -nodes", len(cfg.Nodes)), close: func() {}}
	case cfg.RealLocal > 0:
		t, err = startRealLocalShape(cfg.RealLocal, cfg.Shape, cfg.Shards, cfg.Password, cfg.TLS)
	default:
		t, err = startEmbedded(cfg.Fake, cfg.Password, cfg.InProcess)
	}
	if err != nil {
		return nil, secrets.hideErr(err)
	}
	params.FreshNodes = t.kind != "nodes" || cfg.FreshNodes
	fail := func(err error) (*session, error) {
		t.close()
		return nil, secrets.hideErr(err)
	}
	if cfg.TLS {
		tc, err := cfg.tlsConfig()
		if err != nil {
			return fail(err)
		}
		if t.rootCAs != nil {
			tc.RootCAs = t.rootCAs
		}
		params.TLS, opt.tls = tc, tc
	}
	if err := preflight(ctx, t.addrs, opt); err != nil {
		return fail(err)
	}
	s := &session{t: t, params: params, opt: opt, config: reportConfig(cfg, t, params), env: environment()}
	s.env.Server = serverInfo(ctx, t.addrs[0], opt)
	switch {
	case infoCPU(ctx, t.addrs[0], opt) >= 0:
		s.env.ServerCPU = "INFO CPU (used_cpu_user + used_cpu_sys) of every node"
	case len(t.pids) > 0 && t.kind == "embedded" && t.pids[0] == os.Getpid():
		s.env.ServerCPU = "none: the embedded cluster runs in the benchmark's process (-inprocess)"
	case len(t.pids) > 0:
		s.env.ServerCPU = "/proc/<pid>/stat of the server processes"
	default:
		s.env.ServerCPU = "INFO commandstats only"
	}
	if t.admin {
		if err := applyFaults(ctx, t, opt, cfg.Latency, cfg.NodeCap, cfg.Faults); err != nil {
			return fail(err)
		}
	}
	return s, nil
}

// strategyStart is when strategy i's warm-up starts under -start-at (zero
// without it).
func strategyStart(cfg *Config, i int) time.Time {
	if cfg.StartAt.IsZero() {
		return time.Time{}
	}
	return cfg.StartAt.Add(time.Duration(i) * (cfg.Warmup + cfg.Duration + startAtGap))
}

// measuredList names the strategies of rep and how each ended.
func measuredList(rep *report.Report) string {
	var parts []string
	for _, s := range rep.Strategies {
		if s.Interrupted {
			parts = append(parts, s.Name+" partly")
		} else {
			parts = append(parts, s.Name)
		}
	}
	return strings.Join(parts, ", ")
}

func newStrategy(name string, addrs []string, p lockParams, conns int) (lockStrategy, error) {
	switch name {
	case strategySeq:
		return newPlainStrategy(name, false, addrs, p), nil
	case strategyFanout:
		return newPlainStrategy(name, true, addrs, p), nil
	case strategyMux:
		return newMuxStrategy(addrs, p, conns)
	}
	return nil, fmt.Errorf("unknown strategy %q", name)
}

// progressFunc returns the progress sink: on a terminal a live line
// rewritten every interval; elsewhere (a log, CI) a plain line every
// ProgressEvery, so a long run is never silent. load.Progress{} (no strategy)
// ends a strategy: it clears the live line.
func progressFunc(cfg *Config, o Options) func(load.Progress) {
	if cfg.Quiet {
		return nil
	}
	term := false
	if o.Terminal != nil {
		term = *o.Terminal
	} else if f, ok := o.Stderr.(*os.File); ok {
		term = isTerminal(f)
	}
	n, i := len(cfg.Strategies), 0
	if term {
		return func(p load.Progress) {
			if p.Strategy == "" {
				i++
				fmt.Fprint(o.Stderr, "\r\033[K")
				return
			}
			fmt.Fprint(o.Stderr, "\r\033[K"+progressLine(p, i, n, true, cfg.Rate > 0))
		}
	}
	every := o.ProgressEvery
	if every <= 0 {
		every = cfg.Progress
	}
	if every <= 0 {
		return nil
	}
	var next time.Duration
	return func(p load.Progress) {
		if p.Strategy == "" {
			i++
			next = 0
			return
		}
		if next == 0 {
			next = every
		}
		if p.Elapsed >= next {
			fmt.Fprintln(o.Stderr, "redmux-bench: "+progressLine(p, i, n, false, cfg.Rate > 0))
			for next <= p.Elapsed {
				next += every
			}
		}
	}
}

// progressLine is one progress line of strategy i (0-based) of n: how far
// it is (% of -d or -n) and its ETA, then its rate, operations, failures
// and p99. On a terminal the rate is the last interval's (a live view);
// elsewhere it is the average since the measured phase started ("avg"),
// the figure the table ends with, so that a log's lines agree with it.
func progressLine(p load.Progress, i, n int, term, openLoop bool) string {
	var done float64
	var eta time.Duration
	avg := 0.0
	if p.Elapsed > 0 {
		avg = float64(p.Ops) / p.Elapsed.Seconds()
	}
	switch {
	case p.Duration > 0:
		done = p.Elapsed.Seconds() / p.Duration.Seconds()
		eta = p.Duration - p.Elapsed
	case p.Target > 0:
		done = float64(p.Ops) / float64(p.Target)
		if avg > 0 {
			eta = time.Duration(float64(p.Target-p.Ops) / avg * float64(time.Second))
		}
	}
	done = min(max(done, 0), 1)
	eta = max(eta, 0).Round(100 * time.Millisecond)
	rate, unit := p.OpsPerS, "ops/s"
	if !term {
		rate, unit = avg, "ops/s avg"
	}
	s := fmt.Sprintf("%-6s %d/%d %3.0f%% eta %-6s %6.1fs  %9.0f %s  %8d ops  %5d failed  p99 %s",
		p.Strategy, i+1, n, 100*done, eta, p.Elapsed.Seconds(), rate, unit, p.Ops, p.Errors, format.Us(p.P99Us))
	if openLoop {
		s += fmt.Sprintf("  backlog %d", p.Backlog)
	}
	return s
}

func reportConfig(cfg *Config, t *target, p lockParams) report.ReportConfig {
	rc := report.ReportConfig{
		Title: cfg.Title, Command: cfg.Command, Target: t.desc, TargetKind: t.kind, Nodes: shownAddrs(t.addrs), TLS: cfg.TLS, Strategies: cfg.Strategies,
		Workers: cfg.Workers, MuxConns: cfg.Conns, DirectWaitMs: float64(cfg.DirectWait) / 1e6, MuxTransport: cfg.transportName(), DurationS: cfg.Duration.Seconds(), Ops: cfg.Ops, WarmupS: cfg.Warmup.Seconds(),
		Keys: cfg.Keys, TTLMs: cfg.TTL.Milliseconds(), TimeoutMs: float64(cfg.Timeout) / 1e6, Rate: cfg.Rate,
		Loop: "closed", Workload: cfg.Workload, KeysDist: cfg.KeyDist.String(), User: cfg.User, PasswordSet: cfg.Password != "" || slices.ContainsFunc(t.addrs, func(a string) bool { return len(nodeaddr.URLSecrets(a)) > 0 }), DB: cfg.DB,
		LatencyMs: float64(cfg.Latency) / 1e6, NodeCap: cfg.NodeCap, CapacityRate: cfg.CapacityRate, Percentiles: cfg.Percentiles, DriftFactor: p.DriftFactor, DriftMs: float64(p.DriftFixed) / 1e6,
	}
	if cfg.Rate > 0 {
		rc.Loop = "open"
	}
	if !cfg.StartAt.IsZero() {
		rc.StartAt = cfg.StartAt.UTC().Format(time.RFC3339Nano)
	}
	if cfg.Segment.IsSet() {
		seg := cfg.SegmentOf
		rc.Segment = &seg
	}
	if cfg.Hold.Kind != "" {
		rc.Hold, rc.HoldMeanMs = cfg.Hold.String(), float64(cfg.Hold.Mean())/1e6
	}
	for _, f := range cfg.Faults {
		rc.Faults = append(rc.Faults, f.String())
	}
	return rc
}

// shownAddrs returns addrs as reports show them: a URL's password as ***.
func shownAddrs(addrs []string) []string {
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i] = nodeaddr.RedactURL(a)
	}
	return out
}

func environment() report.Env {
	e := report.Env{
		Time: time.Now().UTC().Format(time.RFC3339), GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH,
		NumCPU: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), CPU: cpuModel(), LoadAvgStart: loadAvg(),
	}
	e.Build = currentBuild()
	if r := e.Build.Revision; len(r) >= 12 {
		e.Revision = r[:12]
	}
	return e
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// serverSnap is the servers' counters at one instant.
type serverSnap struct {
	stats []map[string]cmdStat // per node; nil entry when unreadable
	cpuNs int64
	cpuOK bool
	// nodeCPU is each node's INFO CPU used_cpu_user+used_cpu_sys in
	// seconds (-1: the node did not report it).
	nodeCPU []float64
}

func serverSnapshot(ctx context.Context, t *target, opt *connOpts) serverSnap {
	var s serverSnap
	for i, a := range t.addrs {
		if t.silent[i] {
			s.stats = append(s.stats, nil)
			s.nodeCPU = append(s.nodeCPU, -1)
			continue
		}
		st, err := commandStats(ctx, a, opt)
		if err != nil {
			st = nil
		}
		s.stats = append(s.stats, st)
		s.nodeCPU = append(s.nodeCPU, infoCPU(ctx, a, opt))
	}
	if len(t.pids) > 0 && !(t.kind == "embedded" && t.pids[0] == os.Getpid()) {
		s.cpuOK = true
		for _, pid := range t.pids {
			ns, ok := pidCPU(pid)
			s.cpuNs += ns
			s.cpuOK = s.cpuOK && ok
		}
	}
	return s
}

// infoCPU returns a node's INFO CPU used_cpu_user + used_cpu_sys in
// seconds, or -1 when it does not report them.
func infoCPU(ctx context.Context, addr string, opt *connOpts) float64 {
	b, err := command(ctx, addr, opt, "INFO", "cpu")
	if err != nil {
		return -1
	}
	return parseInfoCPU(string(b))
}

// parseInfoCPU sums used_cpu_user and used_cpu_sys of an INFO reply (-1
// when either is missing).
func parseInfoCPU(s string) float64 {
	var user, sys float64
	var got int
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (k != "used_cpu_user" && k != "used_cpu_sys") {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return -1
		}
		if k == "used_cpu_user" {
			user = f
		} else {
			sys = f
		}
		got++
	}
	if got < 2 {
		return -1
	}
	return user + sys
}

func serverCost(before, after serverSnap, ops int64, nodes int) *report.ServerCost {
	c := &report.ServerCost{}
	var setUs, evUs int64
	for i := range after.stats {
		if i >= len(before.stats) || before.stats[i] == nil || after.stats[i] == nil {
			continue
		}
		c.NodesReporting++
		b, a := before.stats[i], after.stats[i]
		c.SetCalls += a["set"].Calls - b["set"].Calls
		setUs += a["set"].Usec - b["set"].Usec
		c.EvalshaCalls += a["evalsha"].Calls - b["evalsha"].Calls
		evUs += a["evalsha"].Usec - b["evalsha"].Usec
	}
	if c.SetCalls > 0 {
		c.SetUsecPerCall = float64(setUs) / float64(c.SetCalls)
	}
	if c.EvalshaCalls > 0 {
		c.EvalshaUsecPerCall = float64(evUs) / float64(c.EvalshaCalls)
	}
	info := ops > 0 && len(before.nodeCPU) == len(after.nodeCPU) && len(after.nodeCPU) > 0
	for i := range after.nodeCPU {
		info = info && before.nodeCPU[i] >= 0 && after.nodeCPU[i] >= 0
	}
	switch {
	case info:
		var sum float64
		for i := range after.nodeCPU {
			v := max(0, after.nodeCPU[i]-before.nodeCPU[i]) * 1e6 / float64(ops)
			sum += v
			c.MaxNodeCPUUsPerOp = max(c.MaxNodeCPUUsPerOp, v)
		}
		c.CPUUsPerOpPerNode = sum / float64(len(after.nodeCPU))
		c.CPUSource = "info"
	case before.cpuOK && after.cpuOK && ops > 0 && nodes > 0:
		c.CPUUsPerOpPerNode = float64(after.cpuNs-before.cpuNs) / 1e3 / float64(ops) / float64(nodes)
		c.MaxNodeCPUUsPerOp = c.CPUUsPerOpPerNode
		c.CPUSource = "process"
	}
	if c.NodesReporting == 0 && c.CPUUsPerOpPerNode == 0 {
		return nil
	}
	if c.NodesReporting == 0 {
		c.NotRead = "no node answered INFO commandstats"
	}
	return c
}

// notReadWhy says why INFO commandstats was not read from addrs when its
// nodes are Sentinel or Cluster nodes: the processes that execute the
// commands are found at run time, and INFO is not asked of them.
func notReadWhy(c *report.ServerCost, addrs []string) {
	if c == nil || c.NotRead == "" {
		return
	}
	for _, a := range addrs {
		for _, scheme := range []string{nodeaddr.SentinelScheme, nodeaddr.ClusterScheme} {
			if strings.HasPrefix(strings.ToLower(a), scheme+"://") {
				c.NotRead = "INFO commandstats is not asked through " + scheme + ":// nodes (the primaries that execute the commands are found at run time)"
				return
			}
		}
	}
}

// blackholeSetup is what a blackholed node adds to a strategy's set-up: the
// dial and set-up timeout its connections wait out (DialTimeout in run.go).
const blackholeSetup = time.Second

// runPlan says how long each strategy runs and about how long the whole
// run takes.
func runPlan(cfg *Config) string {
	n := len(cfg.Strategies)
	if cfg.Ops > 0 {
		return fmt.Sprintf("%s warm-up then %d operations per strategy", cfg.Warmup, cfg.Ops)
	}
	total := time.Duration(n) * (cfg.Warmup + cfg.Duration)
	setup := ""
	for _, f := range cfg.Faults {
		if f.Kind == "blackhole" {
			// Workers are set up together: one set-up timeout per strategy
			// (seq and fanout: per connection to the blackholed node).
			total += time.Duration(n) * blackholeSetup
			setup = fmt.Sprintf(", with %s of connection set-up per strategy: a blackholed node never answers it", blackholeSetup)
		}
	}
	return fmt.Sprintf("%s warm-up then %s per strategy (about %s in all%s)", cfg.Warmup, cfg.Duration, total.Round(time.Second/10), setup)
}
