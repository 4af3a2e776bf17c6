package bench

import "errors"

// ErrStrategyUnavailable: the strategy cannot run in this build.
var ErrStrategyUnavailable = errors.New("bench: strategy unavailable")

func newMuxStrategy(addrs []string, p LockParams, workers int) (Strategy, error) {
	return nil, ErrStrategyUnavailable
}
