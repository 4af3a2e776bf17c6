package redlock

import (
	"testing"
	"time"
)

// TestTrustTable: one row per rule of docs/OPERATIONS.md, as etcd's raft
// keeps its quorum rule in a table (quorum/testdata/majority_commit.txt).
// The functions are pure: the same inputs give the same verdict.
func TestTrustTable(t *testing.T) {
	const s = int64(100 * time.Second) // when the set-up read INFO
	known := incPrev{Known: true, RunID: "r1", ReplID: "h1"}
	inc := func(run, repl string, up time.Duration, promoted bool) incObs {
		return incObs{Known: true, RunID: run, ReplID: repl, Uptime: up, Promoted: promoted, Seen: s}
	}
	for _, tc := range []struct {
		rule  string
		prev  incPrev
		p     incObs
		r     incRules
		quar  bool
		from  int64
		cause error
		fail  bool
	}{
		// Rule 1: no set-up yet: nothing to judge.
		{"1: no set-up yet", known, incObs{Nil: true}, incRules{}, false, 0, nil, false},
		// Rule 1: the same process and history: nothing changes.
		{"1: same incarnation", known, inc("r1", "h1", time.Hour, false), incRules{}, false, 0, nil, false},
		// Rule 1: INFO refused at first sight: any process, of any age,
		// from an older snapshot with its marker kept: quarantined from
		// the set-up (the marker of rule 4 does not see a lost tail).
		{"1: unknown at first sight", incPrev{}, incObs{Seen: s}, incRules{}, true, s, ErrIncarnationUnknown, false},
		// Rule 1: INFO refused again at a later set-up (its connection
		// broke: a restart?): quarantined from that set-up, every time.
		{"1: unknown again", incPrev{}, incObs{Seen: s}, incRules{Persistent: true}, true, s, ErrIncarnationUnknown, false},
		// Rule 1: unknown, but what New saw under WithTrustNodesAtStart: trusted.
		{"1: unknown at New, trusted at start", incPrev{}, incObs{Seen: s}, incRules{AtStart: true}, false, 0, ErrIncarnationUnknown, false},
		// Rule 1: told before, refuses now: it may have restarted, quarantined from now.
		{"1: stopped telling", known, incObs{Seen: s}, incRules{}, true, s, ErrIncarnationUnknown, false},
		// Rule 2: first sight of a young process: from its latest start, seen -
		// uptime + 1 s (rounding).
		{"2: first sight, uptime 5s", incPrev{}, inc("r1", "h1", 5*time.Second, false), incRules{}, true, s - int64(4*time.Second), ErrNodeRestarted, false},
		// Rule 2: uptime 1 at 40 ms old (Redis's rounding): never later than seen.
		{"2: first sight, uptime 1s", incPrev{}, inc("r1", "h1", time.Second, false), incRules{}, true, s, ErrNodeRestarted, false},
		{"2: first sight, uptime 0", incPrev{}, inc("r1", "h1", 0, false), incRules{}, true, s, ErrNodeRestarted, false},
		// Rule 2: a negative uptime (a wrapped one) counts as 0: from seen,
		// never wrapped to long ago.
		{"2: first sight, uptime negative", incPrev{}, inc("r1", "h1", -292*365*24*time.Hour, false), incRules{}, true, s, ErrNodeRestarted, false},
		{"2: restart, uptime negative", known, inc("r2", "h2", time.Duration(-1<<63), false), incRules{}, true, s, ErrNodeRestarted, false},
		// Rule 2: first sight under WithTrustNodesAtStart, of what New saw: trusted.
		{"2: trusted at New", incPrev{}, inc("r1", "h1", 0, false), incRules{AtStart: true}, false, 0, nil, false},
		// Rule 2: first sight with persistence declared: trusted...
		{"2: first sight, persistent", incPrev{}, inc("r1", "h1", 0, false), incRules{Persistent: true}, false, 0, nil, false},
		// ...but not a promoted replica, whatever the disk.
		// Its fencing counters are stale as after a failover seen
		// (docs/FENCING.md, "Raise first", attack 4), trusted at start or not.
		{"2: first sight, persistent, promoted", incPrev{}, inc("r1", "h1", 0, true), incRules{Persistent: true}, true, s, ErrNodeRestarted, true},
		{"2: trusted at New, promoted", incPrev{}, inc("r1", "h1", 0, true), incRules{AtStart: true}, false, 0, nil, true},
		// Rule 2: a restart (new run_id): from the new process's latest start.
		{"2: restart", known, inc("r2", "h2", 3*time.Second, false), incRules{}, true, s - int64(2*time.Second), ErrNodeRestarted, false},
		// Rule 2: a restart with persistence declared: reported, not quarantined.
		{"2: restart, persistent", known, inc("r2", "h1", 0, false), incRules{Persistent: true}, false, 0, ErrNodeRestarted, false},
		// Rule 2: a failover on the same process (new history): from when it was seen.
		{"2: failover, same process", known, inc("r1", "h2", time.Hour, false), incRules{}, true, s, ErrNodeFailover, true},
		// Rule 2: a promoted replica (new process, second_repl_offset set):
		// from when seen, even if persistent.
		{"2: failover, promoted", known, inc("r3", "h3", time.Hour, true), incRules{Persistent: true}, true, s, ErrNodeFailover, true},
	} {
		v := judgeIncarnation(tc.prev, tc.p, tc.r)
		if v.Quarantine != tc.quar || (tc.quar && v.From != tc.from) || v.Cause != tc.cause || v.Failover != tc.fail {
			t.Errorf("%s: got quarantine %v from %v cause %v failover %v; want %v from %v cause %v failover %v", tc.rule,
				v.Quarantine, time.Duration(v.From-s), v.Cause, v.Failover, tc.quar, time.Duration(tc.from-s), tc.cause, tc.fail)
		}
	}

	for _, tc := range []struct {
		rule     string
		accepted string
		has      bool
		m        markerObs
		dup      bool
		want     markerAction
	}{
		// Rule 4: no marker (a wipe, a restart without persistence, a first
		// use): make one, with its young key.
		{"4: absent", "a", true, markerObs{}, false, markInit},
		{"4: absent at first sight", "", false, markerObs{}, false, markInit},
		// Rule 4: the accepted id: nothing to do (the young key alone decides).
		{"4: accepted", "a", true, markerObs{Present: true, ID: "a"}, false, markKeep},
		// Rule 4: the accepted id, also found on another node (that one is the copy): kept here.
		{"4: accepted, copied elsewhere", "a", true, markerObs{Present: true, ID: "a"}, true, markKeep},
		// Rule 4: first sight: accept it.
		{"4: first sight", "", false, markerObs{Present: true, ID: "b"}, false, markAccept},
		// Rule 4: first sight of an id another node shows too: a copied data set, replaced.
		{"4: first sight, duplicate", "", false, markerObs{Present: true, ID: "b"}, true, markReinit},
		// Rule 4: another id: replaced at a time nothing says: accept, quarantine from now.
		{"4: changed", "a", true, markerObs{Present: true, ID: "b"}, false, markAcceptNew},
		// Rule 4: another id that is another node's: a copy, replaced.
		{"4: changed to a sibling's", "a", true, markerObs{Present: true, ID: "b"}, true, markReinit},
	} {
		if got := judgeMarker(tc.accepted, tc.has, tc.m, tc.dup); got != tc.want {
			t.Errorf("%s: got action %d, want %d", tc.rule, got, tc.want)
		}
	}

	// Rule 5: the quarantine is the largest of the record, the TTLs used and WithQuarantine.
	for _, tc := range []struct {
		record, used, configured, want time.Duration
	}{
		{30 * time.Second, time.Second, 0, 30 * time.Second}, // another client's 30 s lock, this client's 1 s
		{0, 2 * time.Second, 0, 2 * time.Second},             // no record read yet: its own
		{time.Second, time.Second, time.Minute, time.Minute}, // WithQuarantine above both
	} {
		if got := quarantinePeriod(tc.record, tc.used, tc.configured); got != tc.want {
			t.Errorf("5: quarantinePeriod(%v, %v, %v) = %v, want %v", tc.record, tc.used, tc.configured, got, tc.want)
		}
	}
}
