//go:build linux

package bench

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

const ioctlGetTermios = syscall.TCGETS

// pidCPU returns a process's user+system CPU time in nanoseconds, from
// /proc/<pid>/stat.
func pidCPU(pid int) (int64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	// fields after ")": state(0) ppid(1) ... utime(11) stime(12)
	if len(f) < 13 {
		return 0, false
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	const hz = 100 // USER_HZ on Linux
	return (ut + st) * (1e9 / hz), true
}
