package bench

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redmux/redmux/bench/internal/report"

	"github.com/stretchr/testify/require"
)

// Issue 36 item 1: one failing light step does not void a strategy. Two of
// the three embedded nodes stop answering (FAKE BLACKHOLE) for 300ms,
// twice, in the first run of the lightest step, so that many of its
// operations fail on their 100ms per-node timeout (no quorum). The step is
// run again at once (before the objective is derived), the re-run holds,
// and so do the heavier steps: capacity above 400 ops/s, exit 0 with
// -fail-on-breach, and the report says what was run again and why.
func TestSweepSurvivesOneFailingLightStep(t *testing.T) {
	var once sync.Once
	planted := make(chan struct{})
	sweepStepHook = func(tag string, addrs []string, opt *connOpts) {
		if tag != "mux.r100" {
			return
		}
		once.Do(func() {
			go func() {
				defer close(planted)
				for k := 0; k < 2; k++ {
					for _, a := range addrs[:2] {
						_, err := command(context.Background(), a, opt, "FAKE", "BLACKHOLE", "300ms")
						if err != nil {
							t.Errorf("FAKE BLACKHOLE: %v", err)
						}
					}
					time.Sleep(400 * time.Millisecond)
				}
			}()
		})
	}
	t.Cleanup(func() { sweepStepHook = nil })
	dir := t.TempDir()
	var out, errb bytes.Buffer
	code := Main([]string{"sweep", "-fake", "3", "-strategy", "mux", "-rates", "100,200,400", "-step", "1s", "-warmup", "300ms",
		"-timeout", "100ms", "-slo", "p99<500ms", "-refine", "0", "-fail-on-breach", "-out", dir}, &out, &errb, noEnv)
	<-planted
	require.Equal(t, ExitOK, code, "stdout: %s\nstderr: %s", out.String(), errb.String())
	rep := readSweepJSON(t, dir)
	ss := rep.Strategies[0]
	require.GreaterOrEqual(t, ss.KneeRate, 400.0, "%+v", steps(ss))
	require.False(t, ss.Saturated, "%+v", steps(ss))
	first := ss.Steps[0]
	require.Equal(t, 100.0, first.TargetRate)
	require.True(t, first.Repeated, "%+v", first)
	require.Greater(t, first.FailedShare, report.MaxFailedShare, "the planted blackholes failed operations: %+v", first)
	require.Contains(t, first.Why, "failed")
	require.Equal(t, "mux.r100.run2", ss.Steps[1].Tag)
	require.True(t, ss.Steps[1].Held, "%+v", ss.Steps[1])
	require.Contains(t, errb.String(), "lightest step 100 ops/s: ")
	require.Contains(t, errb.String(), "; run again")
	md, err := os.ReadFile(filepath.Join(dir, report.FileSweepReport))
	require.NoError(t, err)
	require.Contains(t, string(md), "**mux: steps run again or set aside.** 100 ops/s was run again: ")
	require.Contains(t, string(md), "the re-run held")
	require.True(t, strings.Contains(out.String(), "100 ops/s was run again"), out.String())
}
