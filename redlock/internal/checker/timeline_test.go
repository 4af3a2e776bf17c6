package checker

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redmux/redmux/redlock"
)

type faultList []Note

func (f faultList) FaultsBetween(from, to time.Time) []Note {
	var out []Note
	for _, n := range f {
		if !n.At.Before(from) && !n.At.After(to) {
			out = append(out, n)
		}
	}
	return out
}

func (f faultList) Inject(ctx context.Context, _ *rand.Rand) {}

// TestTimelines: an overlap's timeline lists the resource's claims, the
// clients' quarantines and the injected faults in its window, in time
// order, and nothing outside it.
func TestTimelines(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	rec := NewRecorder()
	rec.Add(Interval{Resource: "r", Holder: 13, Holding: 1, Start: at(0), End: at(90), Kind: "acquired", Note: "key on nodes [+ + + - -]"})
	rec.Add(Interval{Resource: "r", Holder: 2, Holding: 2, Start: at(30), End: at(60), Kind: "acquired"})
	rec.Add(Interval{Resource: "other", Holder: 5, Holding: 3, Start: at(10), End: at(20), Kind: "acquired"})
	obs := []*endCounter{newEndCounter(), newEndCounter()}
	obs[1].Observe(redlock.Event{Op: redlock.OpIncarnation, Node: 3, Duration: 93 * time.Millisecond, Err: errors.New("restarted")})
	obs[1].incs[0].at = at(20)
	faults := faultList{{at(-2000), "node 0: long before"}, {at(25), "node 0: resync"}}
	cfg := &Config{WorkersPerClient: 4, Faults: faults}
	rep := rec.Check()
	require.Equal(t, 1, rep.Violations)
	tl := timelines(cfg, rep, rec, obs)
	require.Len(t, tl, 1)
	lines := strings.Split(strings.TrimSpace(tl[0]), "\n")
	require.Len(t, lines, 5, tl[0])
	require.Contains(t, lines[1], "holder 13 (client 3) claims r until +90.000ms (acquired) key on nodes [+ + + - -]")
	require.Contains(t, lines[2], "client 1 quarantines node 3 for 93ms: restarted")
	require.Contains(t, lines[3], "fault: node 0: resync")
	require.Contains(t, lines[4], "holder 2 (client 0)")
	require.NotContains(t, tl[0], "long before")
	require.NotContains(t, tl[0], "holder 5")
}
