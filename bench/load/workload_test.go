package load

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestHoldDraws(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	u := Hold{Kind: "uniform", A: time.Millisecond, B: 3 * time.Millisecond}
	e := Hold{Kind: "exp", A: 2 * time.Millisecond}
	var sumU, sumE time.Duration
	const n = 20000
	for i := 0; i < n; i++ {
		d := u.draw(r)
		require.True(t, d >= time.Millisecond && d <= 3*time.Millisecond, d)
		sumU += d
		sumE += e.draw(r)
	}
	require.InDelta(t, 2e6, float64(sumU/n), 0.05e6)
	require.InDelta(t, 2e6, float64(sumE/n), 0.1e6)
	require.Equal(t, 5*time.Millisecond, Hold{Kind: "fixed", A: 5 * time.Millisecond}.draw(r))
}

func TestKeyIndex(t *testing.T) {
	seen := map[int]int{}
	for w := 0; w < 4; w++ {
		for k := 0; k < 10; k++ {
			i := keyIndex(w, k, 4, 10)
			require.Less(t, i, 10)
			if prev, ok := seen[i]; ok {
				require.Equal(t, w, prev, "key sets are disjoint per worker")
			}
			seen[i] = w
		}
	}
	for k := 0; k < 5; k++ {
		require.Equal(t, 0, keyIndex(3, k, 8, 1))
	}
}
