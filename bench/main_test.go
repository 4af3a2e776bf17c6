package bench

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	ChildMain() // the embedded cluster's child process is this test binary
	os.Exit(m.Run())
}
