package checker

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redmux/redmux/redlock"
)

// Leftovers checks availability after failed acquisitions: clients contend
// for the resources (no faults, no crashes, a TTL that outlives the run:
// MaxDuration + 15s, so that a key left behind at any moment is still there
// when the nodes are read), every holder releases, and then no key may
// remain on any node: a failed attempt must release on every node, those
// that granted it included, also when its ctx ended mid-attempt
// (AcquireCtxRate), and a Release must be sent whatever its ctx
// (EndedCtxRate). kl reads the nodes. The checker supplies the lock values
// (WithValueSource), so it knows which leftover belongs to a failed
// attempt and which to a holding that was released (also listed in
// Result.ReleasedLeftovers); both are Report.Leftovers.
func Leftovers(cfg Config, kl KeyLister) (Result, error) {
	cfg.CrashRate, cfg.HoldToEnd, cfg.ExtendRate, cfg.PauseRate = 0, 0, 0, 0
	cfg.Faults, cfg.StopOnViolation = nil, false
	if cfg.TTL <= 0 {
		// longer than the run: a key left behind at any moment is still
		// there when the nodes are read (a 15s TTL let the first keys of
		// a 25s run expire unseen)
		maxDur := cfg.MaxDuration
		if maxDur <= 0 {
			maxDur = time.Minute // Run's default
		}
		cfg.TTL = maxDur + 15*time.Second
	}
	if cfg.NodeTimeout <= 0 {
		cfg.NodeTimeout = 200 * time.Millisecond
	}
	vs := &valueSource{}
	cfg.Options = append(cfg.Options, redlock.WithValueSource(vs))
	won := &sync.Map{}
	cfg.won = won
	res, err := Run(cfg)
	if err != nil {
		return res, err
	}
	cfg.defaults()
	res.Leftovers = []string{}
	seen := map[string]bool{}
	// scan reports the keys left on any node, once each.
	scan := func() {
		for i := 0; i < cfg.Resources; i++ {
			key := fmt.Sprintf("checker:res:%d", i)
			vals, ttls := kl.KeyValues(key)
			for node, v := range vals {
				if v == nil {
					continue
				}
				id := fmt.Sprintf("%d %s %x", node, key, v)
				if seen[id] {
					continue
				}
				seen[id] = true
				desc := fmt.Sprintf("node %d %s value #%x pttl %v", node, key, v[:8], ttls[node].Round(time.Millisecond))
				if _, ok := won.Load(string(v)); ok {
					desc = "released holding: " + desc
					res.ReleasedLeftovers = append(res.ReleasedLeftovers, desc)
				}
				res.Leftovers = append(res.Leftovers, desc)
			}
		}
	}
	// Releases after failed attempts wait for one answer only; let the
	// others land. Every holding was released: what is left now was left
	// by the contended run.
	time.Sleep(100 * time.Millisecond)
	scan()
	if err := minorityAttempts(cfg, vs, won, kl); err != nil {
		return res, err // with the leftovers found so far (the test logs both)
	}
	time.Sleep(100 * time.Millisecond)
	scan()
	return res, nil
}

// minorityAttempts makes attempts that a minority of nodes grants: a
// blocker holds every resource on a bare majority of the nodes, and a
// client on all of them tries each resource a few times (each try is
// granted by the other nodes, refused by the majority, and must release
// what it got). Then the blocker releases.
func minorityAttempts(cfg Config, vs *valueSource, won *sync.Map, kl KeyLister) error {
	ctx := context.Background()
	q := len(cfg.Addrs)/2 + 1
	opts := []redlock.Option{redlock.WithTTL(cfg.TTL), redlock.WithNodeTimeout(cfg.NodeTimeout), redlock.WithValueSource(vs), redlock.WithTries(100)}
	blocker, err := redlock.New(cfg.Addrs[:q], opts...)
	if err != nil {
		return err
	}
	defer blocker.Close()
	c, err := redlock.New(cfg.Addrs, opts...)
	if err != nil {
		return err
	}
	defer c.Close()
	for i := 0; i < cfg.Resources; i++ {
		key := fmt.Sprintf("checker:res:%d", i)
		bl, err := blocker.Acquire(ctx, key)
		if err != nil {
			return fmt.Errorf("checker: blocker on a majority: %w", err)
		}
		v := bl.ValueArray()
		won.Store(string(v[:]), true)
		// the blocker returned at its quorum (2 of 3): wait until its
		// third SET landed too, or a contender could win that node first
		n := 0
		for wait := time.Now().Add(2 * time.Second); ; time.Sleep(time.Millisecond) {
			vals, _ := kl.KeyValues(key)
			n = 0
			for _, x := range vals[:q] {
				if string(x) == string(v[:]) {
					n++
				}
			}
			if n == q {
				break
			}
			if time.Now().After(wait) {
				break
			}
		}
		if n < q {
			// A node of the majority holds another value: a key left
			// behind by the contended run (Leftovers reports it), which
			// is what this check is for. Try the next resource (the
			// blocker's validity may have ended while it waited: its
			// release is best effort).
			_ = bl.Release(ctx)
			continue
		}
		for k := 0; k < 5; k++ {
			if l, err := c.TryAcquire(ctx, key); err == nil {
				_ = l.Release(ctx)
				return fmt.Errorf("checker: %q acquired while a majority held it", key)
			}
		}
		if err := bl.Release(ctx); err != nil {
			return fmt.Errorf("checker: blocker release: %w", err)
		}
	}
	return nil
}

// valueSource makes unique lock values: a counter and a fixed tail.
type valueSource struct{ n atomic.Uint64 }

func (v *valueSource) Read(p []byte) (int, error) {
	var b [redlock.ValueSize]byte
	x := v.n.Add(1)
	for i := 0; i < 8; i++ {
		b[i] = byte(x >> (56 - 8*i))
	}
	copy(b[8:], "redmux-check")
	return copy(p, b[:]), nil
}
