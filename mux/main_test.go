package mux

import (
	"os"
	"testing"

	"github.com/redmux/redmux/fakeserver"
)

func TestMain(m *testing.M) {
	fakeserver.ServeChild() // the child-process cluster of startChild is this binary
	os.Exit(m.Run())
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
