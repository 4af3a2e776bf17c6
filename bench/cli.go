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
	secrets := passwordsIn(args, getenv)
	hide := func(s string) string {
		for _, pw := range secrets {
			s = redact(s, pw)
		}
		return s
	}
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintln(stderr, "redmux-bench: internal error:", hide(fmt.Sprint(r)))
			code = ExitFailure
		}
	}()
	if len(args) > 0 && args[0] == "merge" {
		return mergeMain(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "compare" {
		return compareMain(args[1:], stdout, stderr)
	}
	sweep := len(args) > 0 && args[0] == "sweep"
	var cfg *Config
	var err error
	if sweep {
		cfg, err = parseSweepArgs(args[1:], getenv)
	} else {
		cfg, err = ParseArgs(args, getenv)
	}
	if errors.Is(err, flag.ErrHelp) {
		if sweep {
			sweepUsage(stdout)
		} else {
			writeUsage(stdout)
		}
		return ExitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "redmux-bench: %v (see redmux-bench -h)\n", err)
		return ExitUsage
	}
	if cfg.Version {
		fmt.Fprintln(stdout, versionString())
		return ExitOK
	}
	if len(passwordsIn(args, nil)) > 0 {
		fmt.Fprintln(stderr, passwordWarning)
	}
	secrets = append(secrets, cfg.Password)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		// After the first signal, a second one ends the process at once.
		<-ctx.Done()
		stop()
	}()
	if sweep {
		return sweepMain(ctx, cfg, stdout, stderr, hide)
	}
	return runMain(ctx, cfg, stdout, stderr, hide)
}

// sweepMain runs a parsed sweep and maps the outcome to an exit status.
func sweepMain(ctx context.Context, cfg *Config, stdout, stderr io.Writer, hide func(string) string) int {
	rep, err := runSweep(ctx, cfg, Options{Stdout: stdout, Stderr: stderr})
	where := ""
	if rep != nil && cfg.Out != "" {
		where = strings.TrimSuffix(cfg.Out, "/") + "/" + fileSweepReport
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
		where = strings.TrimSuffix(cfg.Out, "/") + "/" + fileReport
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
