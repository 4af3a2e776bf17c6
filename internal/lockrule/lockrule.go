// Package lockrule holds the decision rules of the Redlock algorithm, shared
// by package redlock and by bench's seq and fanout strategies, so that those
// decide exactly as redlock does and differ only in how they talk to the
// nodes. They live here, not in redlock's exported API, because they are no
// part of what a lock user calls.
package lockrule

import "time"

// Quorum returns the default quorum of n nodes: n/2 + 1.
func Quorum(n int) int { return n/2 + 1 }

// TTLMillis returns the PX argument for ttl: whole milliseconds, rounded
// up, so that no node holds the key for less than ttl.
func TTLMillis(ttl time.Duration) int64 {
	return int64((ttl + time.Millisecond - 1) / time.Millisecond)
}

// Drift returns the clock drift allowance for ttl: ttl*factor + fixed.
func Drift(ttl time.Duration, factor float64, fixed time.Duration) time.Duration {
	return time.Duration(float64(ttl)*factor) + fixed
}

// Acquired is the decision of one acquisition attempt: at least quorum
// nodes granted the lock and validity (ttl - elapsed - drift, elapsed
// measured from before the first command was sent until the decision) is
// above minValidity (0 by default). Otherwise the attempt failed and its
// value must be released on all N nodes.
func Acquired(granted, quorum int, validity, minValidity time.Duration) bool {
	//mutant:accept-no-validity
	return granted >= quorum && validity > minValidity
}

// QuorumLost reports whether failed nodes (errors, not refusals) leave
// fewer than quorum of n nodes able to agree.
func QuorumLost(failed, quorum, n int) bool { return failed > n-quorum }
