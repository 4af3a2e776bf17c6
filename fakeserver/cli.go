package fakeserver

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// cliOptions are the parsed command line of Main.
type cliOptions struct {
	nodes    int
	host     string
	port     int
	password string
	noAdmin  bool
	sweep    time.Duration

	latency, jitter, clockOffset []time.Duration
	drift                        []float64
	failNext, malform            []int
	failText                     string
	down, blackhole              map[int]bool
}

func parseCLI(args []string, stderr io.Writer) (*cliOptions, error) {
	fs := flag.NewFlagSet("fakeredis", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := &cliOptions{}
	var lat, jit, off, drift, fail, malform, down, hole string
	fs.IntVar(&o.nodes, "nodes", 5, "number of nodes")
	fs.StringVar(&o.host, "host", "127.0.0.1", "listen host")
	fs.IntVar(&o.port, "port", 7000, "port of the first node; nodes use port, port+1, ...; 0 picks free ports")
	fs.StringVar(&o.password, "password", "", "requirepass for every node (never printed)")
	fs.BoolVar(&o.noAdmin, "no-admin", false, "disable the FAKE admin command")
	fs.DurationVar(&o.sweep, "sweep", 100*time.Millisecond, "active expiry sweep interval")
	perNode := " (one value for all nodes, or a comma-separated value per node)"
	fs.StringVar(&lat, "latency", "", "fixed reply latency, e.g. 10ms"+perNode)
	fs.StringVar(&jit, "jitter", "", "extra uniform random latency in [0,jitter)"+perNode)
	fs.StringVar(&off, "clock-offset", "", "node clock offset, e.g. -2s"+perNode)
	fs.StringVar(&drift, "clock-drift", "", "node clock drift rate, e.g. 0.01"+perNode)
	fs.StringVar(&fail, "fail-next", "", "number of replies replaced by -fail-text"+perNode)
	fs.StringVar(&o.failText, "fail-text", "ERR fakeredis injected failure", "error text for -fail-next")
	fs.StringVar(&malform, "malform-next", "", "number of replies replaced by malformed bytes"+perNode)
	fs.StringVar(&down, "down", "", "comma-separated node indexes (0-based) that start down")
	fs.StringVar(&hole, "blackhole", "", "comma-separated node indexes (0-based) that start blackholed")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.nodes < 1 || o.nodes > 1000 {
		return nil, fmt.Errorf("-nodes %d: want 1..1000", o.nodes)
	}
	if o.sweep <= 0 {
		return nil, fmt.Errorf("-sweep %v: want a positive interval", o.sweep)
	}
	if o.port < 0 || o.port+o.nodes-1 > 65535 {
		return nil, fmt.Errorf("-port %d: nodes would not fit below 65536", o.port)
	}
	var err error
	if o.latency, err = cliList("latency", lat, o.nodes, nonNegative(time.ParseDuration)); err != nil {
		return nil, err
	}
	if o.jitter, err = cliList("jitter", jit, o.nodes, nonNegative(time.ParseDuration)); err != nil {
		return nil, err
	}
	if o.clockOffset, err = cliDurations("clock-offset", off, o.nodes); err != nil {
		return nil, err
	}
	if o.drift, err = cliList("clock-drift", drift, o.nodes, func(s string) (float64, error) { return strconv.ParseFloat(s, 64) }); err != nil {
		return nil, err
	}
	for i := range o.drift {
		if err := CheckClock(o.clockOffset[i], o.drift[i]); err != nil {
			return nil, fmt.Errorf("-clock-offset/-clock-drift for node %d: %v", i, err)
		}
	}
	if o.failNext, err = cliList("fail-next", fail, o.nodes, nonNegative(strconv.Atoi)); err != nil {
		return nil, err
	}
	if o.malform, err = cliList("malform-next", malform, o.nodes, nonNegative(strconv.Atoi)); err != nil {
		return nil, err
	}
	if o.down, err = cliIndexSet("down", down, o.nodes); err != nil {
		return nil, err
	}
	if o.blackhole, err = cliIndexSet("blackhole", hole, o.nodes); err != nil {
		return nil, err
	}
	return o, nil
}

// cliList parses "" (zero for all), "v" (v for all) or "v0,v1,..." (one per node).
func cliList[T any](name, s string, n int, parse func(string) (T, error)) ([]T, error) {
	out := make([]T, n)
	if s == "" {
		return out, nil
	}
	parts := strings.Split(s, ",")
	if len(parts) != 1 && len(parts) != n {
		return nil, fmt.Errorf("-%s: %d values for %d nodes (give one, or one per node)", name, len(parts), n)
	}
	for i := range out {
		p := strings.TrimSpace(parts[0])
		if len(parts) == n {
			p = strings.TrimSpace(parts[i])
		}
		if p == "" {
			continue
		}
		v, err := parse(p)
		if err != nil {
			return nil, fmt.Errorf("-%s: bad value %q: %v", name, p, err)
		}
		out[i] = v
	}
	return out, nil
}

func cliDurations(name, s string, n int) ([]time.Duration, error) {
	return cliList(name, s, n, time.ParseDuration)
}

// nonNegative wraps parse to refuse a negative value: a latency, a jitter
// or a count below zero is a mistake, not a request for none.
func nonNegative[T int | time.Duration](parse func(string) (T, error)) func(string) (T, error) {
	return func(s string) (T, error) {
		v, err := parse(s)
		if err == nil && v < 0 {
			return v, fmt.Errorf("negative")
		}
		return v, err
	}
}

func cliIndexSet(name, s string, n int) (map[int]bool, error) {
	out := map[int]bool{}
	if s == "" {
		return out, nil
	}
	for _, p := range strings.Split(s, ",") {
		i, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || i < 0 || i >= n {
			return nil, fmt.Errorf("-%s: bad node index %q (want 0..%d)", name, p, n-1)
		}
		out[i] = true
	}
	return out, nil
}

// usageError is a bad command line (exit status 2); any other error from
// Main is a run failure (exit status 1).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// ExitCode maps Main's error to fakeredis's exit status: 0 for nil, 2 for a
// bad command line, 1 for a run failure (a node that cannot start or stop).
func ExitCode(err error) int {
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		return 2
	}
	return 1
}

// Main is the fakeredis command (cmd/fakeredis is only this call and signal
// handling): it parses args as fakeredis's flags (usage and flag errors go
// to stderr), starts the nodes, applies the start-up faults, prints one
// "ready <addr>" line per node to stdout once every node accepts
// connections, serves until ctx is done, then closes the nodes and prints
// "stopped N nodes". -h returns nil; ExitCode maps any other error to the
// exit status. The password is never printed.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseCLI(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usageError{err}
	}
	cfg := Config{
		Addr:          net.JoinHostPort(o.host, strconv.Itoa(o.port)),
		Password:      o.password,
		DisableAdmin:  o.noAdmin,
		SweepInterval: o.sweep,
	}
	cl, err := StartCluster(o.nodes, cfg)
	if err != nil {
		return err
	}
	defer cl.Close()
	for i, n := range cl.Nodes {
		n.SetLatency(o.latency[i], o.jitter[i])
		if o.clockOffset[i] != 0 || o.drift[i] != 0 {
			n.SetClock(o.clockOffset[i], o.drift[i])
		}
		if o.failNext[i] > 0 {
			n.FailNext(o.failNext[i], o.failText)
		}
		if o.malform[i] > 0 {
			n.MalformNext(o.malform[i])
		}
		if o.blackhole[i] {
			n.Blackhole()
		}
	}
	for i, n := range cl.Nodes {
		fmt.Fprintf(stdout, "ready %s\n", n.Addr())
		if o.down[i] {
			n.Down()
		}
	}
	<-ctx.Done()
	err = cl.Close()
	fmt.Fprintf(stdout, "stopped %d nodes\n", len(cl.Nodes))
	return err
}
