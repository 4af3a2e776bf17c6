package bench

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redmux/redmux/bench/internal/report"
	"github.com/redmux/redmux/bench/load"
	"github.com/stretchr/testify/require"
)

// -hold and -keys-dist reach Config parsed (bench/load's
// TestParseHoldAndKeyDist checks the parsers); bad values are usage errors
// that name the flag.
func TestHoldAndKeyDistFlags(t *testing.T) {
	c, err := ParseArgs([]string{"-hold", "exp:1ms", "-keys-dist", "zipf:1.2"}, noEnv)
	require.NoError(t, err)
	require.Equal(t, load.Hold{Kind: "exp", A: time.Millisecond}, c.Hold)
	require.Equal(t, load.KeyDist{Kind: load.KeysZipf, S: 1.2}, c.KeyDist)
	for _, args := range [][]string{{"-hold", "5"}, {"-keys-dist", "zipf:1"}} {
		_, err := ParseArgs(args, noEnv)
		require.ErrorIs(t, err, ErrUsage, "%v", args)
		require.Contains(t, err.Error(), args[0])
	}
}

// The contended report: one key, every worker fighting for it, each holding
// it 5ms. Redlock's mutual exclusion allows at most one holder at a time, so
// hand-offs are at most one per 5ms; every other attempt is refused. The
// report says how many attempts a hand-off took.
func TestContendedReportsHandoffs(t *testing.T) {
	dir := t.TempDir()
	rep, stdout, _ := runArgs(t, []string{"-fake", "3", "-strategy", "mux", "-workload", "contended", "-hold", "5ms", "-c", "8",
		"-d", "600ms", "-warmup", "100ms", "-timeout", "500ms", "-out", dir}, false)
	s := rep.Strategies[0]
	require.Positive(t, s.Acquired)
	require.Positive(t, s.NotAcquired, "8 workers on one key: most attempts are refused")
	require.Greater(t, s.Ops, s.Acquired)
	require.LessOrEqual(t, s.AcquiredPerSec, 1/0.005*1.05+2, "hand-offs/s over one key held 5ms each: %v", s.AcquiredPerSec)
	require.Contains(t, stdout, "acquired/s")
	require.Contains(t, stdout, "hold 5ms")
	md := readFile(t, dir+"/"+report.FileReport)
	for _, want := range []string{"### Contention", "hand-offs/s", "attempts per hand-off", "busy", "hold inside the lock (-hold)"} {
		require.Contains(t, md, want)
	}
	var b bytes.Buffer
	require.NoError(t, report.WriteJSON(&b, rep))
	require.True(t, strings.Contains(b.String(), `"acquired_per_sec"`) && strings.Contains(b.String(), `"hold": "5ms"`), b.String()[:200])
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}
