//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package bench

import (
	"os"
	"syscall"
)

func processCPU() (int64, bool) { return 0, false }

func isTerminal(*os.File) bool { return false }

func childSysProcAttr() *syscall.SysProcAttr { return nil }

func pidCPU(int) (int64, bool) { return 0, false }
