// Command redmux-bench benchmarks Redlock acquire/release latency and
// throughput with strategies side by side (seq, fanout, mux), against an
// embedded fake cluster (the default) or real Redis masters. See package
// github.com/redmux/redmux/bench and `redmux-bench -h`.
package main

import (
	"os"

	"github.com/redmux/redmux/bench"
)

func main() {
	bench.ChildMain() // serves the embedded cluster when started as its child process
	os.Exit(bench.Main(os.Args[1:], os.Stdout, os.Stderr, os.Getenv))
}
