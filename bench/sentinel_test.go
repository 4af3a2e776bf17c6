package bench

import (
	"strings"
	"testing"
)

// A redis-sentinel:// node passes -nodes validation (the mux strategy runs
// it through redlock), and the plain connections of seq and fanout refuse
// it with a clear error that shows no password.
func TestSentinelNodeNeedsMux(t *testing.T) {
	const a = "redis-sentinel://:pw-secret@127.0.0.1:26379?sentinelMasterId=locks&sentinel=127.0.0.1:26380&sentinel_password=sp-secret"
	if err := checkNode(a); err != nil {
		t.Fatalf("checkNode: %v", err)
	}
	if got := splitNodes(a + ",127.0.0.1:6379"); len(got) != 2 || got[0] != a {
		t.Fatalf("splitNodes: %q", got)
	}
	pc := newPlainConn(a, &connOpts{})
	if pc.perr == nil || !strings.Contains(pc.perr.Error(), "-strategy mux") || strings.Contains(pc.perr.Error(), "secret") {
		t.Fatalf("plain connection: %v", pc.perr)
	}
}
