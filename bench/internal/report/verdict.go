package report

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/redmux/redmux/bench/internal/format"
	"github.com/redmux/redmux/bench/load"
)

// MaxFailedShare: a sweep step with a larger share of failed operations
// does not hold, whatever its latency.
const MaxFailedShare = 0.01

// Rerunnable: a step that did not hold, whether on its latency, on not
// keeping up with its rate or on failures (a lone stall on a shared machine,
// a node paused for a moment), is run once more; the repeat's verdict
// stands. Interrupted steps and steps that measured nothing are not.
func (st *SweepStep) Rerunnable() bool {
	return !st.Held && !st.Repeated && !st.Interrupted && st.Ops > 0
}

// Breaches lists the strategies that missed the sweep's target: with
// -capacity-rate, those whose capacity under the objective is below it
// (a sweep that never saturated below it has not shown it holds); without,
// those where no step held.
func (rep *SweepReport) Breaches() []string {
	var out []string
	r := rep.Config.CapacityRate
	for _, ss := range rep.Strategies {
		switch {
		case ss.Knee == nil:
			out = append(out, fmt.Sprintf("%s: no step held %s", ss.Name, ss.SLO))
		case r > 0 && ss.KneeRate < r && ss.Saturated:
			out = append(out, fmt.Sprintf("%s: capacity %s ops/s under %s, below -capacity-rate %s", ss.Name, format.Count(ss.KneeRate), ss.SLO, format.Count(r)))
		case r > 0 && ss.KneeRate < r:
			out = append(out, fmt.Sprintf("%s: held up to %s ops/s, the highest rate tried, below -capacity-rate %s (not shown to hold)", ss.Name, format.Count(ss.KneeRate), format.Count(r)))
		}
	}
	return out
}

// FindKnee sets the knee: the highest-rate step that held, every lighter
// step holding too, except lone failures: a step that did not hold (its
// re-run included) whose next heavier step held is set aside (SetAside),
// since a rate that a heavier one holds is not past capacity (a glitch
// spanning both of its runs is not a knee). Two steps in a row that do not
// hold end the prefix.
func (ss *SweepStrategy) FindKnee() {
	sort.SliceStable(ss.Steps, func(i, j int) bool { return ss.Steps[i].TargetRate < ss.Steps[j].TargetRate })
	ss.Knee, ss.KneeRate, ss.Saturated = nil, 0, false
	var judged []*SweepStep
	for _, st := range ss.Steps {
		st.SetAside = false
		if !st.Repeated && !st.Interrupted {
			judged = append(judged, st)
		}
	}
	for i, st := range judged {
		if st.Held {
			ss.Knee, ss.KneeRate = st, st.TargetRate
			continue
		}
		if i+1 < len(judged) && judged[i+1].Held && judged[i+1].TargetRate > st.TargetRate {
			st.SetAside = true
			continue
		}
		ss.Saturated = true
		break
	}
}

// FirstFailAbove is the lightest step above the knee that did not hold
// (nil if none).
func (ss *SweepStrategy) FirstFailAbove() *SweepStep {
	for _, st := range ss.Steps {
		if !st.Held && !st.Repeated && !st.Interrupted && st.TargetRate > ss.KneeRate {
			return st
		}
	}
	return nil
}

// Judge decides whether a measured step holds the objective.
func (st *SweepStep) Judge(slo SLO) {
	st.SLOUs = us(load.ValueAtPercentile(st.Hist, slo.P))
	budget := float64(slo.Max) / 1e3
	switch {
	case st.Interrupted:
		st.Why = fmt.Sprintf("interrupted after %.1fs: not judged", st.DurationS)
	case st.Ops == 0:
		st.Why = "no operation completed"
	case st.Saturated:
		st.Why = "saturated: " + st.Saturation
	case st.FailedShare > MaxFailedShare:
		st.Why = fmt.Sprintf("%.1f%% of operations failed (over %g%%)", 100*st.FailedShare, 100*MaxFailedShare)
	case st.SLOUs > budget:
		st.Why = fmt.Sprintf("%s %s over %s", format.Percentile(slo.P), format.Us(st.SLOUs), format.Us(budget))
	default:
		st.Held = true
		st.Why = ""
		return
	}
	st.Held = false
}

// SLO is a latency objective: percentile P of every operation's latency
// at most Max.
type SLO struct {
	P   float64
	Max time.Duration
}

func (s SLO) String() string { return format.Percentile(s.P) + "<" + s.Max.String() }

// Machine CPU starvation: a step's figures are this machine's, not the
// target's, when its 1-minute load average reached starvedLoadPerCPU
// runnable threads per logical CPU (the benchmark's own processes run at
// most about 2 per CPU: the client's and an embedded cluster's
// GOMAXPROCS), a hypervisor stole starvedSteal of its time, or other
// processes kept starvedOthersShare of its CPUs busy while they were
// nearly all busy.
const (
	starvedLoadPerCPU  = 2.5
	starvedSteal       = 0.05
	starvedOthersShare = 0.25
)

// Starved says how this machine's CPU was starved during the step ("":
// it was not, or nothing was measured).
func (st *SweepStep) Starved(numCPU int) string {
	if st == nil || numCPU <= 0 {
		return ""
	}
	n := float64(numCPU)
	var why []string
	if st.LoadAvg >= starvedLoadPerCPU*n {
		why = append(why, fmt.Sprintf("load average %.1f on %d logical CPUs", st.LoadAvg, numCPU))
	}
	if st.OtherCores >= starvedOthersShare*n && st.MachineBusyCores >= 0.85*n {
		why = append(why, fmt.Sprintf("other processes used %.2f of its %d CPUs (%.2f busy in all)", st.OtherCores, numCPU, st.MachineBusyCores))
	}
	if st.StealShare >= starvedSteal {
		why = append(why, fmt.Sprintf("%.0f%% of CPU time stolen by the hypervisor", 100*st.StealShare))
	}
	return strings.Join(why, ", ")
}

// FailedShare is the share of operations that failed.
func (s *StrategyResult) FailedShare() float64 {
	if s.Ops == 0 {
		return 0
	}
	return float64(s.Failed) / float64(s.Ops)
}

// Metric is the latency summary of one of load.Metrics.
func (s *StrategyResult) Metric(m string) Latency {
	switch m {
	case load.MetricAcquire:
		return s.Acquire
	case load.MetricRelease:
		return s.Release
	case load.MetricNotAcquired:
		return s.NotAcquiredLat
	case load.MetricFailed:
		return s.FailedLat
	}
	return s.AcquireRelease
}

// Glitch says why a step, before any objective, is run again: too many of
// its operations failed, or it did not keep up ("" for neither, or a step
// that was interrupted or measured nothing).
func (st *SweepStep) Glitch() string {
	switch {
	case st == nil || st.Interrupted || st.Ops == 0:
		return ""
	case st.FailedShare > MaxFailedShare:
		return fmt.Sprintf("%.1f%% of operations failed (over %g%%: %s)", 100*st.FailedShare, 100*MaxFailedShare, ErrString(st.Errors))
	case st.Saturated:
		return "saturated: " + st.Saturation
	}
	return ""
}
