//go:build unix

package redistest

import "syscall"

func processExists(pid int) bool { return syscall.Kill(pid, 0) == nil }
