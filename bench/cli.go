package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/redmux/redmux/bench/internal/report"
)

// Exit statuses of Main.
const (
	ExitOK      = 0
	ExitFailure = 1 // the run failed: unreachable node, wrong password, I/O error
	ExitUsage   = 2 // bad command line
	// ExitInterrupted is the status after SIGINT/SIGTERM (128+SIGINT, as
	// shells report it); the report for what was measured is written.
	ExitInterrupted = 130
	// ExitBreach is the status of a sweep run with -fail-on-breach whose
	// capacity missed -capacity-rate (or where no step held); the report is
	// written.
	ExitBreach = 3
)

// passwordWarning is printed on stderr (one line, before the run) when a
// password is given on the command line, with -password or in a -nodes
// URL: other users of the machine can read a command line (ps,
// /proc/PID/cmdline). redis-cli warns the same way about -a and -u.
const passwordWarning = "redmux-bench: warning: a password on the command line (-password, or in a -nodes URL) may not be safe: other users of this machine can read it with ps; set " + envPassword + " instead (a -nodes URL without a password uses it)"

// Main is the redmux-bench command: args without the program name. It
// returns the exit status. Errors are one line on stderr, never a stack
// trace; the password never appears in any output.
func Main(args []string, stdout, stderr io.Writer, getenv func(string) string) (code int) {
	c := &cli{args: args, stdout: stdout, stderr: stderr, getenv: getenv, secrets: passwordsIn(args, getenv)}
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintln(stderr, "redmux-bench: internal error:", c.hide(fmt.Sprint(r)))
			code = ExitFailure
		}
	}()
	if len(args) > 0 {
		for _, sc := range subcommands {
			if args[0] == sc.name {
				return sc.main(c, args[1:])
			}
		}
	}
	return c.lockRun(args, ParseArgs, writeUsage, runMain)
}

// subcommands are redmux-bench's subcommands, by the first argument; any
// other first argument is the benchmark run's (ParseArgs).
var subcommands = []struct {
	name string
	main func(c *cli, args []string) int // args: those after the name
}{
	{"sweep", func(c *cli, args []string) int { return c.lockRun(args, parseSweepArgs, sweepUsage, sweepMain) }},
	{"merge", func(c *cli, args []string) int { return mergeMain(args, c.stdout, c.stderr) }},
	{"compare", func(c *cli, args []string) int { return compareMain(args, c.stdout, c.stderr) }},
	{"render", func(c *cli, args []string) int { return renderMain(args, c.stdout, c.stderr) }},
}

// cli is one Main call: its command line, outputs and environment, and the
// passwords no output may show.
type cli struct {
	args           []string // the whole command line, subcommand included
	stdout, stderr io.Writer
	getenv         func(string) string
	secrets        secrets
}

// hide replaces every known password in s (the ones known when it is
// called: lockRun adds the parsed -password).
func (c *cli) hide(s string) string { return c.secrets.hide(s) }

// lockRun parses args with parse (-h: usage on stdout) and runs the
// parsed configuration with run, under a context that the first SIGINT or
// SIGTERM cancels: the benchmark run and sweep.
func (c *cli) lockRun(args []string, parse func([]string, func(string) string) (*Config, error), usage func(io.Writer),
	run func(ctx context.Context, cfg *Config, stdout, stderr io.Writer, hide func(string) string) int,
) int {
	cfg, err := parse(args, c.getenv)
	if errors.Is(err, flag.ErrHelp) {
		usage(c.stdout)
		return ExitOK
	}
	if err != nil {
		fmt.Fprintf(c.stderr, "redmux-bench: %v (see redmux-bench -h)\n", err)
		return ExitUsage
	}
	if cfg.Version {
		fmt.Fprintln(c.stdout, versionString())
		return ExitOK
	}
	if len(passwordsIn(c.args, nil)) > 0 {
		fmt.Fprintln(c.stderr, passwordWarning)
	}
	c.secrets = append(c.secrets, cfg.Password)
	// SIGHUP too: a terminal closed under a run stops it as Ctrl-C does
	// (the report written, local servers stopped), not killed outright
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	go func() {
		// After the first signal, a second one ends the process at once.
		<-ctx.Done()
		stop()
	}()
	return run(ctx, cfg, c.stdout, c.stderr, c.hide)
}

// sweepMain runs a parsed sweep and maps the outcome to an exit status.
func sweepMain(ctx context.Context, cfg *Config, stdout, stderr io.Writer, hide func(string) string) int {
	rep, err := runSweep(ctx, cfg, Options{Stdout: stdout, Stderr: stderr})
	where := ""
	if rep != nil && cfg.Out != "" {
		where = reportAt(cfg.Out, report.FileSweepReport)
	}
	switch {
	case err == nil:
		if where != "" && !cfg.Quiet && cfg.JSON != "-" && cfg.CSV != "-" {
			fmt.Fprintf(stdout, "report: %s\n", where)
		}
		if b := rep.Breaches(); cfg.FailOnBreach && len(b) > 0 {
			fmt.Fprintf(stderr, "redmux-bench: sweep: breach (-fail-on-breach): %s\n", oneLine(hide(strings.Join(b, "; "))))
			return ExitBreach
		}
		return ExitOK
	case errors.Is(err, ErrUsage):
		fmt.Fprintf(stderr, "redmux-bench: sweep: %s\n", oneLine(hide(err.Error())))
		return ExitUsage
	case where != "":
		err = fmt.Errorf("%w; report: %s", err, where)
	}
	fmt.Fprintf(stderr, "redmux-bench: sweep: %s\n", oneLine(hide(err.Error())))
	if errors.Is(err, ErrInterrupted) || ctx.Err() != nil {
		return ExitInterrupted
	}
	return ExitFailure
}

// runMain runs a parsed configuration and maps the outcome to an exit
// status with at most one line on stderr.
func runMain(ctx context.Context, cfg *Config, stdout, stderr io.Writer, hide func(string) string) int {
	o := Options{Stdout: stdout, Stderr: stderr}
	rep, err := Run(ctx, cfg, o)
	where := ""
	if rep != nil && cfg.Out != "" {
		where = reportAt(cfg.Out, report.FileReport)
	}
	switch {
	case err == nil:
		if where != "" && !cfg.Quiet && cfg.JSON != "-" && cfg.CSV != "-" {
			fmt.Fprintf(stdout, "report: %s\n", where)
		}
		return ExitOK
	case errors.Is(err, ErrUsage):
		fmt.Fprintf(stderr, "redmux-bench: %s\n", oneLine(hide(err.Error())))
		return ExitUsage
	case errors.Is(err, ErrInterrupted) || ctx.Err() != nil:
		if where != "" {
			err = fmt.Errorf("%w; report: %s", err, where)
		}
		fmt.Fprintf(stderr, "redmux-bench: %s\n", oneLine(hide(err.Error())))
		return ExitInterrupted
	case rep != nil && where != "":
		err = fmt.Errorf("%w; report: %s", err, where)
	}
	fmt.Fprintf(stderr, "redmux-bench: %s\n", oneLine(hide(err.Error())))
	return ExitFailure
}

// reportAt is the path of the report file name in the -out directory out,
// or "" when it was not written (no error names a report that is not
// there).
func reportAt(out, name string) string {
	p := strings.TrimSuffix(out, "/") + "/" + name
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func mergeMain(args []string, stdout, stderr io.Writer) int {
	c, err := parseMergeArgs(args)
	if errors.Is(err, flag.ErrHelp) {
		mergeUsage(stdout)
		return ExitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "redmux-bench: merge: %v (see redmux-bench merge -h)\n", err)
		return ExitUsage
	}
	if err := runMerge(c, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "redmux-bench: merge: %s\n", oneLine(err.Error()))
		return ExitFailure
	}
	return ExitOK
}
