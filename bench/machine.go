package bench

import (
	"os"
	"runtime"
	"strconv"
	"strings"
)

// machineSnap is the whole machine's CPU time from /proc/stat's cpu line
// (clock ticks, every CPU together); ok false where there is none (not
// Linux).
type machineSnap struct {
	busy, steal, total int64
	ok                 bool
}

// machineSnapshot reads /proc/stat.
func machineSnapshot() machineSnap {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineSnap{}
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return parseProcStatCPU(line)
}

// parseProcStatCPU parses "cpu user nice system idle iowait irq softirq
// steal ...": busy is everything but idle, iowait and steal; steal is the
// time a hypervisor gave this machine's CPUs to someone else.
func parseProcStatCPU(line string) machineSnap {
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return machineSnap{}
	}
	var v [8]int64
	for i := range v {
		n, err := strconv.ParseInt(f[i+1], 10, 64)
		if err != nil {
			return machineSnap{}
		}
		v[i] = n
	}
	var total int64
	for _, n := range v {
		total += n
	}
	idle := v[3] + v[4]
	return machineSnap{busy: total - idle - v[7], steal: v[7], total: total, ok: true}
}

// machineUse is what the machine's CPUs did between two snapshots: busy
// cores (of numCPU) and the share of time stolen.
func machineUse(before, after machineSnap, numCPU int) (busyCores, steal float64, ok bool) {
	dt := after.total - before.total
	if !before.ok || !after.ok || dt <= 0 {
		return 0, 0, false
	}
	return float64(after.busy-before.busy) / float64(dt) * float64(numCPU), float64(after.steal-before.steal) / float64(dt), true
}

func numCPU() int { return runtime.NumCPU() }
