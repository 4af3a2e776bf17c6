package bench

import (
	"os"
	"testing"
)

// envRunMain makes the test binary act as redmux-bench (tests that need a
// real process: signals, exit statuses).
const envRunMain = "REDMUX_BENCH_TEST_MAIN"

func TestMain(m *testing.M) {
	ChildMain() // the embedded cluster's child process is this test binary
	if os.Getenv(envRunMain) == "1" {
		os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr, os.Getenv))
	}
	os.Exit(m.Run())
}
