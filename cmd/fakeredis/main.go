// Command fakeredis runs a cluster of fake Redis nodes (package fakeserver)
// with optional faults applied at start:
//
//	fakeredis -nodes 5 -port 7000 [-host 127.0.0.1] [-password ...] [-latency 10ms,0,0,0,50ms] ...
//
// It prints one "ready <addr>" line per node once every node accepts
// connections, runs until SIGINT or SIGTERM, then shuts down cleanly and
// prints "stopped N nodes". Exit status: 0 after a clean stop, 1 when the
// nodes cannot start or stop (a port in use), 2 for a bad command line. Faults
// can also be changed at run time with the FAKE admin command (see
// docs/FAKESERVER.md). The flags and the rest are fakeserver.Main's.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/redmux/redmux/fakeserver"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := fakeserver.Main(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "fakeredis:", err)
		os.Exit(fakeserver.ExitCode(err))
	}
}
