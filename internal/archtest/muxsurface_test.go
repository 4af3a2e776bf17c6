package archtest

import (
	"fmt"
	"strings"
	"testing"
)

// maxMuxSurface is the most lines `go doc -short ./mux` may print: mux's
// exported API is for lock users (Config, Client, Batch, Policy, the
// replies, the errors). What only redmux-bench needs (the node-address
// parser, the password helpers, the connection set-up for its own
// connections) lives in internal/nodeaddr, which both import (issue 49:
// 43 lines before, 28 after).
const maxMuxSurface = 30

// checkMuxSurface returns the violation in out, the text `go doc -short`
// printed for mux (one line per top-level const or var group, function and
// type, and per constructor or typed constant group under its type), if
// it is more than max lines.
func checkMuxSurface(out string, max int) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) <= max {
		return nil
	}
	return []string{fmt.Sprintf("go doc -short ./mux prints %d lines, over %d: what only bench needs belongs in "+
		"an internal package both import (internal/nodeaddr), not in mux's API:\n%s", len(lines), max, strings.Join(lines, "\n"))}
}

// TestMuxSurface: mux's exported API stays within maxMuxSurface lines of
// `go doc -short` (issue 49).
func TestMuxSurface(t *testing.T) {
	out := run(t, moduleRoot(t), nil, "doc", "-short", "./mux")
	if !strings.Contains(string(out), "func New(cfg Config) (*Client, error)") {
		t.Fatalf("go doc -short ./mux does not list New:\n%s", out)
	}
	report(t, "mux's exported API", checkMuxSurface(string(out), maxMuxSurface))
}

// The surface check passes a listing of max lines (blank lines not
// counted) and reports one more.
func TestMuxSurfaceCatchDrift(t *testing.T) {
	listing := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "func F%d()\n", i)
		}
		return b.String() + "\n"
	}
	if bad := checkMuxSurface(listing(30), 30); len(bad) != 0 {
		t.Fatalf("30 lines reported: %q", bad)
	}
	if bad := checkMuxSurface(listing(31), 30); len(bad) != 1 || !strings.Contains(bad[0], "prints 31 lines, over 30") {
		t.Fatalf("31 lines: %q", bad)
	}
}
