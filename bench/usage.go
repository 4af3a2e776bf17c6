package bench

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// flagGroup is one section of -h: flags that belong together, as
// redis-benchmark and memtier_benchmark group theirs.
type flagGroup struct {
	title string
	names []string
}

// flagGroups is the order of -h. A flag a mode does not define is left
// out; a defined flag no group names goes to "Other" (TestUsageListsEveryFlagOnce
// keeps that group empty).
var flagGroups = []flagGroup{
	{"Target (default: an embedded 5-node fake cluster)", []string{"nodes", "real-local", "shape", "shards", "fake", "user", "password", "db", "timeout", "fresh-nodes", "replica-acks"}},
	{"TLS", []string{"tls", "cacert", "cert", "key", "sni", "insecure"}},
	{"Embedded cluster", []string{"latency", "fault", "node-cap", "inprocess"}},
	{"Load", []string{"strategy", "c", "conns", "transport", "direct-wait", "d", "n", "warmup", "rate", "start-at", "segment"}},
	{"Workload", []string{"workload", "keys", "keys-dist", "hold", "ttl"}},
	{"Sweep", []string{"slo", "slo-from", "rates", "step", "steps", "refine", "capacity-rate", "fail-on-breach"}},
	{"Output", []string{"out", "force", "json", "csv", "hlog", "percentiles", "title", "quiet", "progress", "metrics-addr"}},
	{"Misc", []string{"version"}},
}

// printFlags writes the flags of fs in flagGroups' order, each once, with
// its default once: a usage text that states its default itself ("(default
// ...") gets no second one.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	seen := map[string]bool{}
	groups := append([]flagGroup(nil), flagGroups...)
	var other []string
	fs.VisitAll(func(f *flag.Flag) {
		for _, g := range flagGroups {
			for _, n := range g.names {
				if n == f.Name {
					return
				}
			}
		}
		other = append(other, f.Name)
	})
	groups = append(groups, flagGroup{"Other", other})
	for _, g := range groups {
		var flags []*flag.Flag
		for _, n := range g.names {
			if f := fs.Lookup(n); f != nil && !seen[n] {
				seen[n] = true
				flags = append(flags, f)
			}
		}
		if len(flags) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s:\n", g.title)
		for _, f := range flags {
			printFlag(w, f)
		}
	}
	fmt.Fprintf(w, "  -h, -help\n    \tthis help\n")
}

func printFlag(w io.Writer, f *flag.Flag) {
	name, usage := flag.UnquoteUsage(f)
	if name == "value" {
		if _, ok := f.Value.(durationFlag); ok {
			name = "duration"
		}
	}
	line := "  -" + f.Name
	if name != "" {
		line += " " + name
	}
	if !strings.Contains(usage, "(default") && !zeroDefault(f.DefValue) {
		if isStringFlag(f) {
			usage += fmt.Sprintf(" (default %q)", f.DefValue)
		} else {
			usage += fmt.Sprintf(" (default %s)", f.DefValue)
		}
	}
	fmt.Fprintf(w, "%s\n    \t%s\n", line, strings.ReplaceAll(usage, "\n", "\n    \t"))
}

// zeroDefault reports whether a flag's default is its type's zero value
// (not shown, as the flag package does).
func zeroDefault(v string) bool {
	switch v {
	case "", "0", "false", "0s", "[]":
		return true
	}
	return false
}

// isStringFlag reports whether f is a plain string flag (its default is
// shown quoted).
func isStringFlag(f *flag.Flag) bool {
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return false
	}
	_, isString := g.Get().(string)
	return isString
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
  redmux-bench render DIR...      redraw a run's or sweep's plots (and report) with this version's writer, from its files

Flags, by group:
`)
	printFlags(w, fs)
	fmt.Fprintf(w, `
Exit status: 0 ok, 1 run failure (unreachable node, wrong password, ...), 2 usage error (or a non-empty -out without -force),
130 interrupted; from a built binary (go build -o bin/redmux-bench ./cmd/redmux-bench): go run exits 1 for all.
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
130 interrupted; from a built binary (go build -o bin/redmux-bench ./cmd/redmux-bench): go run exits 1 for all.
`)
}
