//go:build !linux

package load

// threadCPU is unknown here: callers time with the monotonic clock instead
// (an upper bound of the CPU time on a busy machine).
func threadCPU() (int64, bool) { return 0, false }
