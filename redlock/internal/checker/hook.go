package checker

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redmux/redmux/internal/lockrule"
	"github.com/redmux/redmux/redlock"
	"github.com/redmux/redmux/redlock/internal/hook"
)

// hookState is one holder's state for the pause and guess hooks, reached
// through ctx (holderKey): its own random stream for the pauses and the
// lowered proposals, and what the hook saw in the current call.
type hookState struct {
	rng       *rand.Rand
	pauseRate float64
	sendRate  float64 // at hook.ExtendSend (Config.SendPauseRate)
	maxPause  time.Duration
	lowGuess  float64 // Config.LowGuessRate
	lowered   atomic.Int64
	writeBack atomic.Int64 // fenced grants that took the write-back path
	fired     bool         // the hook ran in the current call
	at        time.Time    // when the hook returned (after any pause)
	attempts  atomic.Int64
	paused    atomic.Int64
	sendPause atomic.Int64 // pauses before an extension's send
	longest   atomic.Int64
}

type holderKey struct{}

// pauseAt is the hook installed during runs: it stalls the checker's own
// holders (found through ctx) and notes when it returned. The library
// reads its clock after this, so h.at is never later than its t2. At
// hook.ExtendSend (before the replies) it only stalls: the extension goes
// out late, possibly after its key expired and another holder took it.
func pauseAt(ctx context.Context, p hook.Point) {
	h, _ := ctx.Value(holderKey{}).(*hookState)
	if h == nil {
		return
	}
	switch p {
	case hook.AcquireReplied:
		h.attempts.Add(1)
	case hook.FenceWriteBack:
		h.writeBack.Add(1)
	}
	rate := h.pauseRate
	if p == hook.ExtendSend {
		rate = h.sendRate
	}
	if rate > 0 && h.rng.Float64() < rate {
		d := time.Duration(h.rng.Int64N(int64(h.maxPause)))
		time.Sleep(d)
		h.paused.Add(1)
		if int64(d) > h.longest.Load() {
			h.longest.Store(int64(d))
		}
		if p == hook.ExtendSend {
			h.sendPause.Add(1)
		}
	}
	if p == hook.ExtendSend {
		return
	}
	h.fired = true
	h.at = time.Now()
}

// lastGuess is the latest token proposal a holder made (guessAt's "in
// step" case).
var lastGuess atomic.Uint64

// guessAt is the guess hook installed during runs: at LowGuessRate it
// replaces a holder's token proposal with a lower or equal one.
func guessAt(ctx context.Context, g uint64) uint64 {
	h, _ := ctx.Value(holderKey{}).(*hookState)
	if h == nil || h.lowGuess == 0 || h.rng.Float64() >= h.lowGuess {
		lastGuess.Store(g)
		return g
	}
	h.lowered.Add(1)
	switch h.rng.IntN(3) {
	case 0:
		return g - min(g-1, uint64(h.rng.Int64N(10_000_000))) // a clock up to 10 s behind
	case 1:
		return 1
	}
	return max(lastGuess.Load(), 1)
}

var (
	hookMu    sync.Mutex
	hookUsers int
)

// installHook installs pauseAt while at least one run needs it.
func installHook() (remove func()) {
	hookMu.Lock()
	defer hookMu.Unlock()
	if hookUsers == 0 {
		hook.Set(pauseAt)
		hook.SetGuess(guessAt)
	}
	hookUsers++
	return func() {
		hookMu.Lock()
		defer hookMu.Unlock()
		hookUsers--
		if hookUsers == 0 {
			hook.Set(nil)
			hook.SetGuess(nil)
		}
	}
}

// drift is redlock's default drift allowance for ttl (the checker's
// clients do not change it).
func drift(ttl time.Duration) time.Duration {
	return lockrule.Drift(ttl, redlock.DefaultDriftFactor, redlock.DefaultDriftFixed)
}
