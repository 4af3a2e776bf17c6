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
	// Redis's rounding: two whole-second stamps, so up to 1 s more
	if up := s["uptime_in_seconds"]; s["run_id"] != n.RunID() || len(s["run_id"]) != 40 || up != "3600" && up != "3601" {
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
	if up := s["uptime_in_seconds"]; s["run_id"] == old || up != "0" && up != "1" || r["master_replid"] != oldRepl {
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

// uptime_in_seconds rounds as Redis does: a process started at wall .98
// reports 1 once the wall clock passes the next whole second, 20 ms later.
func TestUptimeRoundsAsRedis(t *testing.T) {
	start := time.Unix(1000, 980_000_000)
	for _, tc := range []struct {
		now  time.Time
		want int64
	}{
		{time.Unix(1000, 990_000_000), 0},
		{time.Unix(1001, 0), 1},           // 20 ms old: 1
		{time.Unix(1001, 970_000_000), 1}, // 990 ms old: 1
		{time.Unix(1002, 10_000_000), 2},  // 1.03 s old: 2
		{time.Unix(999, 0), 0},            // a clock stepped back: never negative
	} {
		if got := uptimeSeconds(tc.now, start); got != tc.want {
			t.Errorf("uptime at %v for a start at %v: %d, want %d", tc.now, start, got, tc.want)
		}
	}
}
