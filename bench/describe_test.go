package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// The run's description (target, strategy, workers, workload, duration)
// is printed before anything is measured: before the first progress line,
// which shares the writer here, and before the table.
func TestDescriptionPrintedFirst(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		want  []string // in the description
		quiet bool
		live  bool // a live progress line is expected (it must come after)
	}{
		{"duration", []string{"-strategy", "mux", "-c", "3", "-d", "1200ms", "-warmup", "0s", "-out", "", "-fake", "2"},
			[]string{"embedded fake cluster, 2 nodes", "mux, 3 workers", "closed loop", "workload acquire-release", "1.2s per strategy"}, false, true},
		{"ops and workload", []string{"-strategy", "seq", "-c", "2", "-n", "300", "-warmup", "0s", "-out", "", "-fake", "1", "-workload", "contended"},
			[]string{"seq, 2 workers", "workload contended", "keys 1", "300 operations per strategy"}, false, false},
		{"quiet", []string{"-strategy", "mux", "-c", "2", "-n", "100", "-warmup", "0s", "-out", "", "-fake", "1", "-quiet"}, nil, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ParseArgs(tc.args, noEnv)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			term := true
			if _, err := Run(context.Background(), cfg, Options{Stdout: &b, Stderr: &b, Terminal: &term}); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			if tc.quiet {
				if strings.Contains(out, "measuring:") {
					t.Errorf("-quiet printed %q", out)
				}
				return
			}
			if !strings.HasPrefix(out, "measuring: ") {
				t.Fatalf("output does not start with the description: %q", out)
			}
			first, _, _ := strings.Cut(out, "\n")
			for _, w := range tc.want {
				if !strings.Contains(first, w) {
					t.Errorf("description %q lacks %q", first, w)
				}
			}
			table := strings.Index(out, "strategy  ops/s")
			if table < len(first) {
				t.Errorf("table at %d, before the description's end", table)
			}
			p := strings.Index(out, "\r\033[K")
			if tc.live && p < 0 {
				t.Errorf("no progress line to order against: %q", out)
			}
			if p >= 0 && p < len(first) {
				t.Errorf("progress before the description")
			}
		})
	}
}

// A sweep says what it measures before its probe.
func TestSweepDescriptionFirst(t *testing.T) {
	cfg, err := parseSweepArgs([]string{"-strategy", "mux", "-fake", "1", "-c", "4", "-rates", "100", "-refine", "0", "-step", "200ms", "-warmup", "0s", "-out", ""}, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if _, err := runSweep(context.Background(), cfg, Options{Stdout: &out, Stderr: &errb}); err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(errb.String(), "\n")
	for _, w := range []string{"redmux-bench sweep: measuring: embedded fake cluster, 1 nodes", "mux, 4 workers", "200ms per step", "steps at 100 ops/s"} {
		if !strings.Contains(first, w) {
			t.Errorf("first line %q lacks %q", first, w)
		}
	}
}
