package load

import (
	"context"
	"runtime"
	"slices"
	"time"
)

// The harness's own CPU time (Result.HarnessNs), so that the CPU left per
// operation is the strategy's (the lock library's and its worker's) and
// not the load generator's. It has two parts:
//
//   - The collector's, measured: every collect of the measured window runs
//     on a locked OS thread and its thread CPU time
//     (CLOCK_THREAD_CPUTIME_ID; elsewhere than Linux its wall time) is
//     summed (Result.CollectNs): draining the workers' buffers, the
//     per-interval merge, the interval log's encoding and the progress
//     line.
//   - The workers', calibrated: before the measured window, the load loop
//     runs calibrateOps operations of the run's workload, closed loop and
//     without holds, on one goroutine against a worker that does nothing
//     (nullWorker), on a locked thread; its thread CPU time per operation
//     (the least of calibrateRounds rounds: Result.LoopNsPerOp) is the
//     loop's own cost per operation: the clock reads, the key choice, the
//     recorder's locks, the recording and the buffers' flushes into the
//     sink. Result.HarnessNs charges it to every measured operation.
//
// Both parts leave out what cannot be told apart from the strategy's
// work: cache misses the harness causes the library and the garbage
// collector's work on the collector's allocations (the interval log's
// encoding). The calibration runs hot in cache, so it is a lower bound of
// the loop's cost under load; the strategy's figure (the process's CPU
// less the harness's) is an upper bound.
const (
	calibrateOps    = 5000
	calibrateRounds = 3
)

// nullWorker is calibrate's worker: every operation succeeds at once.
type nullWorker struct{}

func (nullWorker) Acquire(context.Context, string) (bool, error) { return true, nil }
func (nullWorker) Extend(context.Context) (bool, error)          { return true, nil }
func (nullWorker) Release(context.Context) error                 { return nil }
func (nullWorker) NodeErrors() map[string]int64                  { return nil }
func (nullWorker) Close() error                                  { return nil }

// calibrate returns the load loop's own CPU time per operation for cfg's
// workload (see above), in nanoseconds.
func calibrate(cfg RunConfig, keys []string) float64 {
	c := cfg
	c.Workers, c.Rate, c.Ops, c.Duration, c.Hold = 1, 0, calibrateOps, 0, Hold{}
	ls := newLoadState(c, keys, []Worker{nullWorker{}})
	var scratch counts
	scratch.errs = map[string]int64{}
	per := make([]float64, 0, calibrateRounds)
	ctx := context.Background()
	for range calibrateRounds {
		ls.next.Store(0)
		ns := onThread(func() {
			ls.start = time.Now()
			ls.loop(ctx, 0)
			ls.recs[0].drainInto(&scratch)
		})
		per = append(per, float64(ns)/calibrateOps)
	}
	return slices.Min(per)
}

// onThread runs f on a locked OS thread and returns its thread CPU time
// (its wall time where that is unknown), in nanoseconds.
func onThread(f func()) int64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c0, ok := threadCPU()
	w0 := time.Now()
	f()
	if ok {
		if c1, ok := threadCPU(); ok {
			return c1 - c0
		}
	}
	return int64(time.Since(w0))
}
