package checker

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redmux/redmux/fakeserver"
)

// Profile says which faults FakeFaults injects into a fake cluster.
type Profile struct {
	// Faults within Redlock's assumptions (safety must hold):
	LatencySpikes  bool    // 1-30ms (+5ms jitter) on a node for 30-150ms, often beyond the node timeout
	DownUp         bool    // node down (connections refused and dropped, data kept) for 30-150ms
	Blackhole      bool    // node accepts and reads but never answers for 30-150ms (a partition)
	RestartKeep    bool    // restart keeping data, away 0-100ms
	RestartDelayed bool    // restart LOSING data, away for longer than MaxTTL (the delayed restart)
	ClockDrift     float64 // each node's clock rate set once in [-ClockDrift, +ClockDrift]; safe below the drift factor
	MaxTTL         time.Duration
	MaxImpaired    int           // nodes faulted at once (default 2: a minority of 5)
	Every          time.Duration // mean time between new faults (default 100ms)

	// Faults outside the assumptions (used to show that the checker finds
	// the violations they cause):
	RestartNoDelay bool    // restart losing data, back at once
	FastClocks     float64 // nodes 0..N/2 (a majority) run fast at this rate
}

// FaultCounts counts injected faults by kind.
type FaultCounts struct {
	Latency, Down, Blackhole, RestartKeep, RestartDelayed, RestartNoDelay atomic.Int64
}

func (f *FaultCounts) String() string {
	return fmt.Sprintf("faults: %d latency spikes, %d down/up, %d blackholes, %d restarts keeping data, %d delayed restarts losing data, %d immediate restarts losing data",
		f.Latency.Load(), f.Down.Load(), f.Blackhole.Load(), f.RestartKeep.Load(), f.RestartDelayed.Load(), f.RestartNoDelay.Load())
}

// FakeFaults returns an injector for Config.Inject that applies profile p
// to cl, counting into counts. When ctx is done it waits for the faults in
// progress, heals every node and resets its clock.
func FakeFaults(cl *fakeserver.Cluster, p Profile, counts *FaultCounts) func(context.Context, *rand.Rand) {
	if p.MaxImpaired <= 0 {
		p.MaxImpaired = 2
	}
	if p.Every <= 0 {
		p.Every = 100 * time.Millisecond
	}
	if p.MaxTTL <= 0 {
		p.MaxTTL = time.Second
	}
	type action func(n *fakeserver.Node, d time.Duration, rng *rand.Rand)
	var actions []action
	if p.LatencySpikes {
		actions = append(actions, func(n *fakeserver.Node, d time.Duration, rng *rand.Rand) {
			counts.Latency.Add(1)
			n.SetLatency(time.Millisecond+time.Duration(rng.Int64N(int64(29*time.Millisecond))), 5*time.Millisecond)
			time.Sleep(d)
			n.SetLatency(0, 0)
		})
	}
	if p.DownUp {
		actions = append(actions, func(n *fakeserver.Node, d time.Duration, _ *rand.Rand) {
			counts.Down.Add(1)
			n.Down()
			time.Sleep(d)
			n.Up()
		})
	}
	if p.Blackhole {
		actions = append(actions, func(n *fakeserver.Node, d time.Duration, _ *rand.Rand) {
			counts.Blackhole.Add(1)
			n.Blackhole()
			time.Sleep(d)
			n.Heal()
		})
	}
	if p.RestartKeep {
		actions = append(actions, func(n *fakeserver.Node, _ time.Duration, rng *rand.Rand) {
			counts.RestartKeep.Add(1)
			_ = n.Restart(false, time.Duration(rng.Int64N(int64(100*time.Millisecond))))
		})
	}
	if p.RestartDelayed {
		// Longer than any key can live: the largest TTL, stretched by the
		// slowest clock the profile allows, plus a margin.
		delay := time.Duration(float64(p.MaxTTL)*(1+2*p.ClockDrift)) + p.MaxTTL/10 + 20*time.Millisecond
		actions = append(actions, func(n *fakeserver.Node, _ time.Duration, _ *rand.Rand) {
			counts.RestartDelayed.Add(1)
			_ = n.Restart(true, delay)
		})
	}
	if p.RestartNoDelay {
		actions = append(actions, func(n *fakeserver.Node, _ time.Duration, _ *rand.Rand) {
			counts.RestartNoDelay.Add(1)
			_ = n.Restart(true, 0)
		})
	}
	return func(ctx context.Context, rng *rand.Rand) {
		nodes := cl.Nodes
		if p.ClockDrift > 0 {
			for _, n := range nodes {
				n.SetClock(0, (rng.Float64()*2-1)*p.ClockDrift)
			}
		}
		if p.FastClocks > 0 {
			for i := 0; i <= len(nodes)/2; i++ {
				nodes[i].SetClock(0, p.FastClocks)
			}
		}
		var mu sync.Mutex
		busy := make([]bool, len(nodes))
		nbusy := 0
		var wg sync.WaitGroup
		defer func() {
			wg.Wait()
			for _, n := range nodes {
				n.ClearFaults()
				n.Up()
			}
		}()
		if len(actions) == 0 {
			<-ctx.Done()
			return
		}
		for {
			wait := p.Every/2 + time.Duration(rng.Int64N(int64(p.Every)))
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			act := actions[rng.IntN(len(actions))]
			i := rng.IntN(len(nodes))
			d := 30*time.Millisecond + time.Duration(rng.Int64N(int64(120*time.Millisecond)))
			mu.Lock()
			if busy[i] || nbusy >= p.MaxImpaired {
				mu.Unlock()
				continue
			}
			busy[i] = true
			nbusy++
			mu.Unlock()
			seed := rng.Uint64()
			wg.Add(1)
			go func() {
				defer wg.Done()
				act(nodes[i], d, rand.New(rand.NewPCG(seed, 1)))
				mu.Lock()
				busy[i] = false
				nbusy--
				mu.Unlock()
			}()
		}
	}
}
