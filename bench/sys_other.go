//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package bench

import "os"

func isTerminal(*os.File) bool { return false }

func pidCPU(int) (int64, bool) { return 0, false }
