package bench_test

import (
	"fmt"
	"os"

	"github.com/redmux/redmux/bench"
)

func ExampleParseFault() {
	f, err := bench.ParseFault("slow:1:10ms")
	fmt.Println(f.Kind, f.Node, f.Fixed, err)
	_, err = bench.ParseFault("slow:1")
	fmt.Println(err)
	// Output:
	// slow 1 10ms <nil>
	// bad -fault "slow:1": slow needs a latency (want slow:<node>:<latency>[:<jitter>], down:<node>, blackhole:<node> or cap:<node>:<commands/s>)
}

func ExampleParseArgs() {
	cfg, err := bench.ParseArgs([]string{"-strategy", "seq,mux", "-c", "8", "-password", "hunter2"}, os.Getenv)
	fmt.Println(cfg.Strategies, cfg.Workers, cfg.Duration, err)
	fmt.Println(cfg.Command)
	_, err = bench.ParseArgs([]string{"-d", "soon"}, os.Getenv)
	fmt.Println(err)
	// Output:
	// [seq mux] 8 5s <nil>
	// redmux-bench -strategy seq,mux -c 8 -password '***'
	// invalid value "soon" for flag -d: not a duration (e.g. 5s, 500ms, 1m)
}

func ExampleMain() {
	code := bench.Main([]string{"-c", "0"}, os.Stdout, os.Stdout, os.Getenv)
	fmt.Println("exit status", code)
	// Output:
	// redmux-bench: -c must be 1..100000, got 0 (see redmux-bench -h)
	// exit status 2
}
