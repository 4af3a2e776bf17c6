//go:build !redmux_mux

package bench

import "fmt"

// Stand-ins while package mux has no implementation (see muxstrategy.go).

func classifyMux(error) string { return "" }

func newMuxStrategy(addrs []string, p LockParams, lanes int) (Strategy, error) {
	return nil, fmt.Errorf("%w: package mux is not implemented yet", ErrStrategyUnavailable)
}
