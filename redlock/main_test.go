package redlock_test

import (
	"os"
	"testing"

	"github.com/redmux/redmux/fakeserver"
)

func TestMain(m *testing.M) {
	fakeserver.ServeChild() // the child-process cluster of startExternalCluster is this binary
	os.Exit(m.Run())
}

// startExternalCluster runs an n-node fake cluster in a child process, so
// that allocation counts (testing.AllocsPerRun, b.ReportAllocs, which count
// the whole process) measure the client alone.
func startExternalCluster(tb testing.TB, n int) []string {
	tb.Helper()
	c, err := fakeserver.StartChild(n, fakeserver.ChildOptions{Args: []string{"-test.run=^$"}})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	seedMarkers(tb, c.Addrs()...) // nodes in service, as startCluster's
	return c.Addrs()
}
