package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/redmux/redmux/bench/load"
)

// Progress lines say how far a strategy is (% and ETA); off a terminal
// their rate is the average since the measured phase started (what the
// table ends with), not the last interval's.
func TestProgressLine(t *testing.T) {
	tests := []struct {
		name     string
		p        load.Progress
		i, n     int
		term     bool
		want     []string
		wantNot  []string
		openLoop bool
	}{
		{"log: average rate, not the last second's", load.Progress{Strategy: "mux", Elapsed: 2 * time.Second, Duration: 5 * time.Second, Ops: 7122, OpsPerS: 2895},
			1, 3, false, []string{"mux", "2/3", " 40%", "eta 3s", "3561 ops/s avg", "7122 ops"}, []string{"2895"}, false},
		{"terminal: live rate", load.Progress{Strategy: "seq", Elapsed: 2 * time.Second, Duration: 5 * time.Second, Ops: 7122, OpsPerS: 2895},
			0, 1, true, []string{"1/1", "2895 ops/s", " 40%", "eta 3s"}, []string{"avg", "3561"}, false},
		{"-n: share of the operations, ETA at the average rate", load.Progress{Strategy: "mux", Elapsed: 2 * time.Second, Ops: 1000, Target: 4000},
			0, 1, false, []string{" 25%", "eta 6s", "500 ops/s avg"}, nil, false},
		{"past the end: 100%, eta 0s", load.Progress{Strategy: "mux", Elapsed: 5100 * time.Millisecond, Duration: 5 * time.Second, Ops: 10},
			0, 1, false, []string{"100%", "eta 0s"}, []string{"-"}, false},
		{"open loop: backlog", load.Progress{Strategy: "mux", Elapsed: time.Second, Duration: 2 * time.Second, Ops: 10, Backlog: 7},
			0, 1, false, []string{"backlog 7"}, nil, true},
	}
	for _, tc := range tests {
		got := progressLine(tc.p, tc.i, tc.n, tc.term, tc.openLoop)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", tc.name, got, w)
			}
		}
		for _, w := range tc.wantNot {
			if strings.Contains(got, w) {
				t.Errorf("%s: %q has %q", tc.name, got, w)
			}
		}
	}
}

// Off a terminal, a run's progress lines carry %, ETA and the average
// rate, and number the strategies in order.
func TestProgressLinesOffTerminal(t *testing.T) {
	cfg, err := ParseArgs([]string{"-strategy", "seq,mux", "-c", "2", "-d", "1200ms", "-warmup", "0s", "-out", "", "-fake", "1"}, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	var out, errb strings.Builder
	term := false
	if _, err := Run(t.Context(), cfg, Options{Stdout: &out, Stderr: &errb, Terminal: &term, ProgressEvery: 500 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
	count := map[string]int{}
	for _, l := range lines {
		if !strings.HasPrefix(l, "redmux-bench: ") || !strings.Contains(l, "%") || !strings.Contains(l, " eta ") || !strings.Contains(l, "ops/s avg") {
			t.Errorf("progress line %q", l)
		}
		switch {
		case strings.Contains(l, "seq    1/2"):
			count["seq"]++
		case strings.Contains(l, "mux    2/2"):
			count["mux"]++
		}
	}
	if count["seq"] == 0 || count["mux"] == 0 || count["seq"]+count["mux"] != len(lines) {
		t.Errorf("lines per strategy %v of %d:\n%s", count, len(lines), errb.String())
	}
}
