package mux

import (
	"fmt"
	"os"
	"testing"

	"github.com/redmux/redmux/fakeserver"
)

func TestMain(m *testing.M) {
	fakeserver.ServeChild() // the child-process cluster of startChild is this binary
	// REDMUX_TEST_TRANSPORT=io_uring runs every client that does not name a
	// transport (TransportAuto) on io_uring, and epoll or unset on epoll (make
	// test runs the package so once).
	switch v := os.Getenv("REDMUX_TEST_TRANSPORT"); v {
	case "", "epoll":
		// The plain run keeps epoll as its transport (the io_uring run
		// covers io_uring); TestAutoTransport covers the default's choice.
		testTransport = TransportEpoll
	case "io_uring":
		testTransport = TransportIOURing
		if err := uringRefused(); err != nil {
			// Every client would fall back to epoll: the run would test
			// nothing the plain run did not. Skipped, unless required.
			if uringRequired() {
				fmt.Fprintf(os.Stderr, "FAIL: REDMUX_TEST_TRANSPORT=io_uring and %s is set, but this machine refuses io_uring (%v)\n", envRequireURing, err)
				os.Exit(1)
			}
			fmt.Fprintf(os.Stderr, "SKIPPED: REDMUX_TEST_TRANSPORT=io_uring, but this machine refuses io_uring (%v): the suite was not run on it\n", err)
			os.Exit(0)
		}
	default:
		fmt.Fprintf(os.Stderr, "REDMUX_TEST_TRANSPORT=%q: want epoll or io_uring\n", v)
		os.Exit(2)
	}
	os.Exit(m.Run())
}

// envRequireURing, set to anything but "" or "0" (CI sets it), turns the
// skips of the io_uring tests where the kernel refuses io_uring into
// failures, so a run cannot pass for tested when it was refused.
const envRequireURing = "REDMUX_REQUIRE_IOURING"

func uringRequired() bool {
	v := os.Getenv(envRequireURing)
	return v != "" && v != "0"
}

// startChild starts an n-node fake cluster in a child process (so that
// allocation counts are the client's alone), closed when t ends.
func startChild(t testing.TB, n int) []string {
	t.Helper()
	cl, err := fakeserver.StartChild(n, fakeserver.ChildOptions{Args: []string{"-test.run=^$"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	return cl.Addrs()
}
