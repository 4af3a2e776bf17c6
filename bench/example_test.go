package bench_test

import (
	"fmt"
	"os"
	"time"

	"github.com/redmux/redmux/bench"
	"github.com/redmux/redmux/bench/load"
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

func ExampleSummarize() {
	h := load.NewHistogram()
	for i := 1; i <= 100; i++ {
		_ = h.RecordValue(int64(time.Duration(i) * time.Millisecond))
	}
	l := bench.Summarize(h)
	fmt.Printf("count %d, p50 %.0fus, p99 %.0fus, max %.0fus\n", l.Count, l.P50Us, l.P99Us, l.MaxUs)
	// Output:
	// count 100, p50 50004us, p99 99025us, max 100008us
}

func ExampleMain() {
	code := bench.Main([]string{"-c", "0"}, os.Stdout, os.Stdout, os.Getenv)
	fmt.Println("exit status", code)
	// Output:
	// redmux-bench: -c must be 1..100000, got 0 (see redmux-bench -h)
	// exit status 2
}
