package mux

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redmux/redmux/fakeserver"
	"github.com/redmux/redmux/resp"
)

// TestMisattributionSoak: many goroutines share a client's connections,
// each sending commands whose replies name the call (ECHO of a unique
// token), with quorum-early decisions (replies abandoned), cancelled
// contexts, short deadlines and, meanwhile, nodes that are slowed,
// blackholed, taken down and restarted. Every reply a call is given must
// be its own: a reply delivered to another call (or another command of
// the same call) is a misattribution, and there must be none. It counts,
// it does not time: the run is bounded by a number of rounds per worker and
// 3 s (REDMUX_SOAK=60s runs for that long instead).
func TestMisattributionSoak(t *testing.T) {
	soak, _ := time.ParseDuration(os.Getenv("REDMUX_SOAK"))
	cl := startFake(t, 3, fakeserver.Config{})
	c := newTestClient(t, cl.Addrs(), func(cfg *Config) {
		cfg.Conns = 2
		cfg.HardTimeout = 300 * time.Millisecond
		cfg.ReconnectMin = 5 * time.Millisecond
		cfg.ReconnectMax = 50 * time.Millisecond
	})
	const workers = 32
	rounds := 3000
	if testing.Short() {
		rounds = 300
	}
	if soak > 0 {
		rounds = 1 << 30 // the duration alone ends it
	} else {
		soak = 3 * time.Second // whichever ends first
	}
	var stop atomic.Bool
	end := time.Now().Add(soak)
	var faults atomic.Int64
	var delivered, abandoned, wrong, calls atomic.Int64
	var firstWrong atomic.Value

	faultsDone := make(chan struct{})
	go func() { // the faults, until the workers are done
		defer close(faultsDone)
		rng := rand.New(rand.NewPCG(1, 2))
		for !stop.Load() {
			faults.Add(1)
			n := cl.Nodes[rng.IntN(3)]
			switch rng.IntN(4) {
			case 0:
				n.SetLatency(time.Duration(rng.IntN(20))*time.Millisecond, 5*time.Millisecond)
				time.Sleep(20 * time.Millisecond)
				n.SetLatency(0, 0)
			case 1:
				n.Blackhole()
				time.Sleep(20 * time.Millisecond)
				n.Heal()
			case 2:
				n.Down()
				time.Sleep(10 * time.Millisecond)
				n.Up()
			case 3:
				_ = n.Restart(false, 0)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()

	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			b := c.NewBatch()
			var cmd []byte
			tokens := make([]string, 2)
			for r := 0; r < rounds && time.Now().Before(end); r++ {
				b.Reset()
				for k := range tokens {
					tokens[k] = strconv.Itoa(w) + "." + strconv.Itoa(r) + "." + strconv.Itoa(k)
					cmd = resp.AppendCommand(cmd[:0], "ECHO", tokens[k])
					b.Broadcast(cmd)
				}
				ctx, cancel := context.Background(), context.CancelFunc(func() {})
				pol := Policy{Timeout: time.Duration(1+rng.IntN(30)) * time.Millisecond}
				switch rng.IntN(4) {
				case 0:
					pol.Quorum = 1 + rng.IntN(2) // decided early: the rest abandoned
				case 1:
					ctx, cancel = context.WithTimeout(ctx, time.Duration(rng.IntN(3))*time.Millisecond)
				}
				_, _ = c.Do(ctx, b, pol)
				cancel()
				calls.Add(1)
				for i := 0; i < c.N(); i++ {
					for k := range tokens {
						rep, err := b.Reply(i, k)
						if err != nil {
							abandoned.Add(1)
							continue
						}
						delivered.Add(1)
						if string(rep.Data) != tokens[k] {
							if wrong.Add(1) == 1 {
								firstWrong.Store("node " + strconv.Itoa(i) + " command " + strconv.Itoa(k) + ": got " + rep.String() + ", want " + tokens[k])
							}
						}
					}
				}
			}
		}()
	}
	wg.Wait()
	stop.Store(true)
	<-faultsDone
	for _, n := range cl.Nodes {
		n.SetLatency(0, 0)
		n.Heal()
		n.Up()
	}
	t.Logf("%d calls, %d replies delivered, %d not (pending, timeout, down, not sent), %d misattributed; %d faults",
		calls.Load(), delivered.Load(), abandoned.Load(), wrong.Load(), faults.Load())
	if w := wrong.Load(); w != 0 {
		t.Fatalf("%d replies delivered to the wrong command; first: %v", w, firstWrong.Load())
	}
	if delivered.Load() == 0 {
		t.Fatal("no reply was delivered: the soak tested nothing")
	}
}
