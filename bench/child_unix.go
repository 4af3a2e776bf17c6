//go:build unix

package bench

import (
	"os"
	"os/signal"
	"syscall"
)

// envFakeChild is set in the environment of the embedded cluster's child
// process (fakeserver.StartChild).
const envFakeChild = "REDMUX_FAKE_CHILD_NODES"

// detachChild, in the embedded cluster's child process, moves it to a
// process group of its own (and ignores SIGINT, should that fail): Ctrl-C in a terminal signals
// the whole foreground group, and the cluster must outlive the benchmark's
// clean stop (operations in flight finish, the interrupted step is written)
// instead of dying under it and turning those operations into failures
// that never happened. The child still ends when its parent closes its
// stdin or dies (SIGKILL on the parent's death, Linux).
func detachChild() {
	if os.Getenv(envFakeChild) == "" {
		return
	}
	_ = syscall.Setpgid(0, 0)
	signal.Ignore(os.Interrupt)
}
