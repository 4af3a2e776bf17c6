//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package bench

import (
	"syscall"
)

const ioctlGetTermios = syscall.TIOCGETA

func pidCPU(int) (int64, bool) { return 0, false }
