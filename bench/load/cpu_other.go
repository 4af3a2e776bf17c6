//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package load

func processCPU() (int64, bool) { return 0, false }
