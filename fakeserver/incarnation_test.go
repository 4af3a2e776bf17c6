package fakeserver

import (
	"strings"
	"testing"
	"time"
)

// INFO reports the incarnation as Redis does; Restart starts a new one;
// Failover loses the writes of the last lag and reports a promotion.
func TestIncarnationInfoRestartFailover(t *testing.T) {
	n := startNode(t, Config{})
	do := func(args ...string) string {
		c := dial(t, n.Addr())
		return c.do(args...)
	}
	info := func(section string) map[string]string {
		r := do("INFO", section)
		out := map[string]string{}
		for _, line := range strings.Split(r, "\r\n") {
			if k, v, ok := strings.Cut(line, ":"); ok {
				out[k] = v
			}
		}
		return out
	}
	s, r := info("server"), info("replication")
	if s["run_id"] != n.RunID() || len(s["run_id"]) != 40 || s["uptime_in_seconds"] != "3600" {
		t.Fatalf("INFO server: %v (run_id %s)", s, n.RunID())
	}
	if r["role"] != "master" || len(r["master_replid"]) != 40 || r["master_replid2"] != noReplID || r["second_repl_offset"] != "-1" {
		t.Fatalf("INFO replication: %v", r)
	}
	old, oldRepl := n.RunID(), r["master_replid"]
	if err := n.Restart(false, 0); err != nil { // kept data: same history
		t.Fatal(err)
	}
	s, r = info("server"), info("replication")
	if s["run_id"] == old || s["uptime_in_seconds"] != "0" || r["master_replid"] != oldRepl {
		t.Fatalf("after a restart keeping data: %v %v", s, r)
	}
	if err := n.Restart(true, 0); err != nil {
		t.Fatal(err)
	}
	if r = info("replication"); r["master_replid"] == oldRepl {
		t.Fatalf("a restart losing data kept the history: %v", r)
	}
	do("SET", "old", "1")
	time.Sleep(300 * time.Millisecond)
	do("SET", "new", "1")
	before := r["master_replid"]
	if err := n.Failover(150*time.Millisecond, 0); err != nil {
		t.Fatal(err)
	}
	r = info("replication")
	if r["master_replid2"] != before || r["second_repl_offset"] == "-1" || r["master_replid"] == before {
		t.Fatalf("after a failover: %v (old history %s)", r, before)
	}
	if _, ok := n.Get("new"); ok {
		t.Fatal("a write within the lag survived the failover")
	}
	if _, ok := n.Get("old"); !ok {
		t.Fatal("a write older than the lag was lost")
	}
}
