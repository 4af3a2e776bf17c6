package checker

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// planConfig draws every kind of plan.
func planConfig(seed uint64) Config {
	return Config{Seed: seed, Resources: 4, MultiRate: 0.2, AcquireCtxRate: 0.2, ZombieRate: 0.1,
		KeepAliveRate: 0.2, KeepAliveExtendRate: 0.5, CrashRate: 0.1, ExtendRate: 0.3, HoldToEnd: 0.3,
		EndCheckRate: 0.5, EndedCtxRate: 0.2, ExtendDeadlineRate: 0.3, TTL: 30 * time.Millisecond}
}

// The plans are a pure function of the seed: the same seed draws the same
// 1,000 plans, another seed others; each prints as one line.
func TestPlansFromSeed(t *testing.T) {
	a := Plans(planConfig(7), 3, 1000)
	require.Equal(t, a, Plans(planConfig(7), 3, 1000))
	b := Plans(planConfig(8), 3, 1000)
	require.Len(t, b, 1000)
	same := 0
	for i := range a {
		if a[i] == b[i] {
			same++
		}
	}
	require.Less(t, same, 100, "seeds 7 and 8 drew %d of 1,000 plans alike", same)
	require.NotEqual(t, a, Plans(planConfig(7), 4, 1000), "another holder draws other plans")
	kinds := map[string]bool{}
	for _, p := range a {
		require.NotContains(t, p, "\n")
		for _, k := range []string{"+", "acquire deadline", "acquire cancel", "zombie", "keep-alive", "extends itself", "crashes",
			"extends late", "extends after", "end check", "holds to its end", "ctx cancelled", "deadline "} {
			if strings.Contains(p, k) {
				kinds[k] = true
			}
		}
	}
	require.Len(t, kinds, 13, "kinds seen: %v", kinds)
	t.Logf("holder 3's first plans under seed 7:\n%s", strings.Join(a[:5], "\n"))
}
