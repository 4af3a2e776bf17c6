package main

import "time"

// Edit replaces exactly one occurrence of Old with New in File (a path
// from the module root). A mutant whose Old text is missing or appears
// more than once fails the run loudly: the code moved and the mutant must
// be updated, never silently skipped.
type Edit struct {
	File, Old, New string
}

// Mutant is one planted bug and the test that must catch it.
type Mutant struct {
	Name  string
	Class string // the bug class, as in issue 15's table
	Test  string // the test that must fail on it
	Short bool   // cheap to catch: part of CI's short run
	// Scripted: Test is a deterministic test (a schedule the checker's
	// random faults cannot produce), caught when it fails.
	Scripted bool
	// Pkg is the package a Scripted mutant's Test is in (default
	// ./redlock); Env, what its run adds to the environment. A Scripted
	// test that skips (io_uring refused, say) is reported as not run,
	// never as caught or passed.
	Pkg string
	Env []string
	// Max, when longer than -max, is this mutant's time limit: for a bug
	// that only a rare schedule exposes.
	Max   time.Duration
	Edits []Edit
}

const (
	safetyTest  = "TestSafetyUnderFaults"
	availTest   = "TestAvailabilityNoLeftovers"
	fenceTest   = "TestSafetyFencing"
	restartTest = "TestSafetyRestarts"
	lateExtTest = "TestSafetyLateExtensions"
	// clusterFailTest: only the faults a shard's marker does not see
	clusterFailTest = "TestSafetyClusterFailovers"
)

// mutants is the list of planted bugs.
var mutants = []Mutant{
	{
		Name: "quorum-n2", Class: "quorum N/2 instead of N/2+1", Test: safetyTest, Short: true,
		Edits: []Edit{
			{"redlock/client.go", "cfg.quorum = n/2 + 1", "cfg.quorum = n / 2"},
			{"redlock/client.go", "if cfg.quorum <= n/2 || cfg.quorum > n {", "if cfg.quorum < n/2 || cfg.quorum > n {"},
		},
	},
	{
		Name: "same-value", Class: "the same value on every attempt", Test: safetyTest, Short: true,
		Edits: []Edit{{"redlock/client.go",
			"_, _ = w.rng.Read(w.val[:]) // ChaCha8.Read never fails",
			`copy(w.val[:], "same-value-every-try")`}},
	},
	{
		Name: "pending-granted", Class: "pending (unanswered) nodes counted as granted", Test: safetyTest, Short: true,
		Edits: []Edit{
			{"redlock/acquire.go",
				"if lockrule.Acquired(out.Successes, c.quorum, time.Duration(end-t2), s.minValidity) {",
				"if lockrule.Acquired(out.Successes+out.Pending, c.quorum, time.Duration(end-t2), s.minValidity) {"},
			{"redlock/acquire.go",
				"return tally{granted: out.Successes}, nil",
				"return tally{granted: out.Successes + out.Pending}, nil"},
		},
	},
	{
		// The checker (TestSafetyRestarts) catches it too, in about 2
		// minutes since the markers cover restarts without persistence:
		// only failovers and restarts from older snapshots are left to it.
		Name: "quarantine-off", Class: "a node's new incarnation counted at once after a restart or failover (no client-enforced delayed restart, issue 32)", Test: "TestQuarantineRestartKeepsMarker", Scripted: true, Short: true,
		Edits: []Edit{{"redlock/incarnation.go",
			"\tif u == 0 {\n\t\treturn true\n\t}\n\tif mono() < u {",
			"\tif u == 0 || true {\n\t\treturn true\n\t}\n\tif mono() < u {"}},
	},
	// Issue 44: the data set's own marker (rule 4), the TTL record every
	// client shares (rule 5), uptime's rounding (rule 2), trust at start.
	{
		// TestSafetyRestarts catches it too, in about a minute
		Name: "marker-unchecked", Class: "a grant counted without its node's data-set marker read with it: wipes and resyncs without a reconnect unseen (issue 44)", Test: "TestQuarantineWipeWithoutRestart", Scripted: true, Short: true,
		Edits: []Edit{{"redlock/client.go",
			"\treturn c.unprotected || c.trusted(i) && ok && !c.slotMoved(w, i) && !c.shardYoung(w, i)\n",
			"\treturn c.unprotected || c.trusted(i) && (ok || true) && !c.slotMoved(w, i) && !c.shardYoung(w, i)\n"}},
	},
	{
		Name: "young-ignored", Class: "a data set younger than the quarantine (its young key alive) counted (issue 44)", Test: "TestQuarantineWipeWithoutRestart", Scripted: true, Short: true,
		Edits: []Edit{{"redlock/marker.go",
			"\tif !a.Null {\n\t\treturn st.trustYoung.Load(), false\n\t}\n",
			"\tif !a.Null {\n\t\treturn true, false\n\t}\n"}},
	},
	{
		Name: "memo-id-unchecked", Class: "the grant's memo of a steady MGET reply used for another accepted id: a backup restored after a flush the client saw, counted as the data set it knew (issue 47)", Test: "TestRealRestoreAfterFlush", Scripted: true,
		Edits: []Edit{{"redlock/marker.go",
			"\tif f := st.steady.Load(); f != nil && f.id == p && f.want == want && bytes.Equal(f.raw, r.Raw) {\n",
			"\tif f := st.steady.Load(); f != nil && f.want == want && bytes.Equal(f.raw, r.Raw) {\n"}},
	},
	{
		// a flush or a full resync told on the connection (CLIENT
		// TRACKING's invalidation of every key), its data set replaced by
		// a copy carrying the accepted marker: mux does not note it
		Name: "flush-push-ignored", Class: "a node's flush or full resync told on the connection is dropped by mux: a resync from a former replica of its own, counted as the data set the client knew", Test: "TestFlushWatchResyncOwnCopy", Short: true, Scripted: true,
		Edits: []Edit{{"mux/flush.go",
			"\t\tif p.CompareAndSwap(old, nw) {\n",
			"\t\tif true || p.CompareAndSwap(old, nw) {\n"}},
	},
	{
		Name: "flush-connection-kept", Class: "a connection that read a flush is kept: a full resync then a promotion of the same process (a failback) is never judged, and its fencing counters, behind, vouch for tokens", Test: "TestRealFencingFailback", Scripted: true,
		Edits: []Edit{{"mux/ingest.go",
			"\t\tif flushed {\n",
			"\t\tif flushed && false {\n"}},
	},
	{
		Name: "flush-not-quarantined", Class: "a node's flush or full resync told on the connection is judged without a quarantine: its lost keys' holders are joined", Test: "TestFlushWatchResyncOwnCopy", Short: true, Scripted: true,
		Edits: []Edit{{"redlock/incarnation.go",
			"\tif f != nil {\n\t\tleft = c.quarantineFrom(t, monoOf(f.At))\n",
			"\tif f != nil && false {\n\t\tleft = c.quarantineFrom(t, monoOf(f.At))\n"}},
	},
	{
		Name: "memo-want-unchecked", Class: "the grant's memo of a steady MGET reply used for another TTL record: a node that missed a declaration is never raised to it (rule 5, issue 47)", Test: "TestRecordRaisedAfterMissedDeclaration", Scripted: true,
		Edits: []Edit{{"redlock/marker.go",
			"\tif f := st.steady.Load(); f != nil && f.id == p && f.want == want && bytes.Equal(f.raw, r.Raw) {\n",
			"\tif f := st.steady.Load(); f != nil && f.id == p && bytes.Equal(f.raw, r.Raw) {\n"}},
	},
	{
		Name: "copied-data-set-accepted", Class: "a marker that changed, or is another node's too (a data set copied from a sibling), accepted and counted at once (issue 44)", Test: "TestMarkerCopiedDataSet", Scripted: true,
		Edits: []Edit{
			{"redlock/trust.go", "\tcase duplicate:\n\t\treturn markReinit\n", "\tcase duplicate && false:\n\t\treturn markReinit\n"},
			{"redlock/marker.go", "\t\t\tst.young.Store(0)\n\t\t\tc.quarantineNow(i, ErrDataSetReplaced)\n", "\t\t\tst.young.Store(0)\n"},
		},
	},
	{
		// real processes: a 1 s client after restarts under a 30 s lock; the
		// checker's holders of other TTLs meet it only now and then (not
		// within 2 minutes of TestSafetyRestarts on a loaded machine)
		Name: "ttl-record-ignored", Class: "the quarantine from the client's own TTLs only: a wiped node counts again while another client's longer lock is held (issue 44)", Test: "TestRealMixedTTLs", Scripted: true,
		Edits: []Edit{{"redlock/trust.go",
			"\treturn max(record, used, configured)\n",
			"\treturn max(used, configured)\n"}},
	},
	{
		Name: "cluster-move-drift-ignored", Class: "a Redis Cluster node's slot move not budgeted: a migrated key loses up to 1 ms of its life to the remaining TTL's rounding, and outlives no validity counted to the last millisecond (rule 5, Redis Cluster)", Test: "TestClusterMoveKeepsValidity", Scripted: true, Short: true,
		Edits: []Edit{{"redlock/client.go",
			"\t\t\tc.def.moveDrift = clusterMoveDrift\n",
			"\t\t\t_ = clusterMoveDrift\n"}},
	},
	{
		// a record above the client's own passed over as steady: learned
		// only before an init, so a client whose nodes were all wiped
		// re-initialises them with its own TTL
		Name: "record-not-learned", Class: "a TTL record above the client's own, read with a grant, not learned: after a wipe of every node the client's young keys last its own TTL (rule 5)", Test: "TestRealRecordLearned", Scripted: true,
		Edits: []Edit{{"redlock/marker.go",
			"\treturn true, v == want || v > want && want >= maxTTLMillis\n",
			"\treturn true, v >= want\n"}},
	},
	{
		Name: "uptime-rounded-down", Class: "a new process trusted from seen - uptime: Redis's uptime overstates the age by up to 1 s (issue 44)", Test: "TestQuarantineUptimeRounding", Scripted: true,
		Edits: []Edit{{"redlock/trust.go",
			"\treturn min(seen, seen-int64(uptime)+int64(uptimeSlack))\n",
			"\treturn seen - int64(uptime)\n"}},
	},
	{
		Name: "trust-at-first-use", Class: "WithTrustNodesAtStart trusts the incarnation met at the first operation, not the one New saw (issue 44)", Test: "TestTrustAtStartOnlyWhatNewSaw", Scripted: true,
		Edits: []Edit{
			{"redlock/client.go", "\tif cfg.trustAtStart {\n\t\t// what New sees is trusted", "\tif false {\n\t\t// what New sees is trusted"},
			{"redlock/incarnation.go", "\t\t\tc.judge(i, p, w, false)\n", "\t\t\tc.judge(i, p, w, c.trust.trustAtStart && c.trust.nodes[i].seen.Load() == nil)\n"},
		},
	},
	{
		Name: "short-quarantine-accepted", Class: "WithQuarantine below the client's own TTL accepted (issue 44)", Test: "TestQuarantineFirstSight", Scripted: true, Short: true,
		Edits: []Edit{{"redlock/incarnation.go",
			"\tif cfg.quarantineSet && cfg.quarantine < cfg.lock.ttl {\n",
			"\tif false {\n"}},
	},
	{
		Name: "readonly-plain-kept", Class: "a plain node's READONLY (made a replica behind the client's back) keeps the connection: the node is not judged again (issue 44)", Test: "TestRealReadOnlyPlainNode", Scripted: true, Pkg: "./mux",
		Edits: []Edit{{"mux/topology.go",
			"\treturn demotedReply(f, false)\n",
			"\treturn nil\n"}},
	},
	{
		Name: "replica-setup-accepted", Class: "a plain node's set-up accepted while the node is a replica: a promotion keeps the connection, and the replica's history, not the promoted one's, stands for it (a failover judged a restart, or a failed-over node's counters read exact)", Test: "TestRealReadOnlyPlainNode", Scripted: true, Pkg: "./mux",
		Edits: []Edit{{"mux/setup.go",
			"\tif inc.Err == \"\" && inc.Role == \"slave\" {\n",
			"\tif inc.Err == \"\" && inc.Role == \"slave\" && false {\n"}},
	},
	{
		Name: "enter-waits-past-deadline", Class: "a call's wait for a read turn of what arrived unasked (enter) has no end but the turn: a holder that never reads keeps Do past its deadline (CI's mutants-short, stop 63)", Test: "TestStrayWaitEndsAtDeadline", Scripted: true, Pkg: "./mux",
		Edits: []Edit{{"mux/driver_token_enter_linux.go",
			"\t\t\tif mono() >= deadline {\n\t\t\t\treturn\n\t\t\t}\n\t\t\tif d.tok.CompareAndSwap",
			"\t\t\tif false {\n\t\t\t\treturn\n\t\t\t}\n\t\t\tif d.tok.CompareAndSwap"}},
	},
	{
		Name: "handoff-stranded", Class: "a caller that hands its writers to a holder whose delivery ended meanwhile does not write them itself: its commands wait for a delivery that may never come (issue 47)", Test: "TestHandOffAfterDeliveryEnded", Scripted: true, Pkg: "./mux", Short: true,
		Edits: []Edit{{"mux/driver_token_linux.go",
			"\tif !d.delivering.Load() {\n\t\tflushClaims(&claims)\n\t}\n",
			"\tif false {\n\t\tflushClaims(&claims)\n\t}\n"}},
	},
	{
		Name: "handoff-never-written", Class: "the holder ends its delivery without writing the writers handed to it (issue 47)", Test: "TestHandOffWrittenAtDeliveryEnd", Scripted: true, Pkg: "./mux", Short: true,
		Edits: []Edit{{"mux/driver_token_linux.go",
			"\tif len(h) > 0 {\n\t\tflushClaims(&h)\n\t}\n",
			"\tif false {\n\t\tflushClaims(&h)\n\t}\n"}},
	},
	// Issue 45: one primary per Sentinel node, as the sentinels' majority
	// sees it, and grants that wait for the replicas.
	{
		Name: "sentinel-role-master-enough", Class: "a Sentinel node's connection kept to any process answering ROLE master: no majority of the sentinels asked, no switch checked (issue 45)", Test: "TestSentinelLaggingSentinelNotTrusted", Scripted: true, Pkg: "./mux",
		Edits: []Edit{{"mux/sentinel.go",
			"\t\t\treplicas, err = c.confirmPrimary(ss, hp, time.Now().Add(c.cfg.DialTimeout))\n\t\t\tif err == nil && c.nodes[i].switchGen.Load() != gen {\n",
			"\t\t\treplicas, err = 1, nil\n\t\t\tif gen != gen {\n"}},
	},
	{
		Name: "watcher-no-liveness", Class: "the +switch-master watcher waits on its sentinel without a deadline: a hung sentinel keeps the client on a replaced primary (issue 45)", Test: "TestSentinelHungWatcher", Scripted: true, Pkg: "./mux",
		Edits: []Edit{{"mux/sentinel.go",
			"\t\trep, err := sc.reply(time.Now().Add(wait))\n",
			"\t\trep, err := sc.reply(time.Time{})\n\t\t_ = wait\n"}},
	},
	{
		Name: "sentinel-hung-waited", Class: "a Sentinel node's set-up and switch checks wait for every sentinel's answer: one hung sentinel holds the client on a replaced primary for DialTimeout per question (issue 45)", Test: "TestSentinelHungSentinelNotWaited", Scripted: true, Pkg: "./mux",
		Edits: []Edit{{"mux/sentinel_confirm.go",
			"\t\tif 2*yes > n || 2*(n-no) <= n {\n",
			"\t\tif false {\n"}},
	},
	{
		Name: "wait-ignored", Class: "a grant on a Sentinel node counted without its replicas' acknowledgement (WAIT): a failover loses it (issue 45)", Test: "TestSentinelWaitGrant", Scripted: true,
		Edits: []Edit{{"redlock/wait.go",
			"\tn := w.waitN[i]\n\tif n <= 0 {\n",
			"\tn := w.waitN[i]\n\tif n <= 0 || true {\n"}},
	},
	{
		Name: "cluster-incarnation-one-shard", Class: "a Redis Cluster node's incarnation taken from its first shard only: a restart or failover of another shard counted at once (issue 33)", Test: clusterFailTest, Short: true,
		// TestSafetyClusterRestarts caught it by luck (since the shards'
		// markers see every wipe, only its failovers and older snapshots
		// are left to it: not in 3 min once, quiet); the run of only
		// those faults catches it in 0.2 to 8.7 s (43 to 1,540
		// acquisitions, 6 runs, 3 beside two CPU burners)
		Edits: []Edit{{"mux/cluster.go",
			"\t\tif p == nil || m == nil || m.addrs[k] == \"\" {\n",
			"\t\tif p == nil || m == nil || m.addrs[k] == \"\" || k > 0 {\n"}},
	},
	{
		// the checker catches it too: TestSafetyInfoRefused (every node
		// refuses INFO) and TestSafetyClusterRestarts (one shard's
		// refusal hides the others' restarts), by luck in the latter
		Name: "unknown-setup-trusted", Class: "a node that refuses INFO trusted at each new set-up (quarantined only when it told its incarnation before): a restart from an older snapshot or a lagging failover, its marker kept, unseen (2026-11-30)", Test: "TestQuarantineInfoRefusedRestartLag", Scripted: true, Short: true,
		Edits: []Edit{{"redlock/trust.go",
			"		if !r.AtStart {\n",
			"		if !r.AtStart && prev.Known {\n"}},
	},
	{
		Name: "cluster-unknown-oldest-seen", Class: "a Redis Cluster node whose shard refuses INFO dated by that shard's set-up, not the newest: another shard's restart quarantined from long ago, so not at all (2026-11-30)", Test: "TestClusterInfoRefusedShardHidesNoRestart", Scripted: true, Short: true,
		Edits: []Edit{{"mux/cluster.go",
			"		if !p.Known {\n			if unknown == \"\" {\n",
			"		if !p.Known {\n			return &Incarnation{Err: p.Err, Seen: p.Seen}\n			if unknown == \"\" {\n"}},
	},
	{
		Name: "slot-move-counted", Class: "a Redis Cluster node's grant counted on a slot that moved between its shards less than the quarantine ago: a shard's FLUSHALL or restart before the move unseen (2026-11-30)", Test: "TestClusterWipeThenMove", Scripted: true, Short: true,
		Edits: []Edit{{"redlock/client.go",
			"\tif t.IsZero() {\n\t\treturn false\n\t}\n\treturn mono() < monoOf(t)",
			"\tif t.IsZero() || true {\n\t\treturn false\n\t}\n\treturn mono() < monoOf(t)"}},
	},
	{
		Name: "cluster-young-one-shard", Class: "a Redis Cluster node's young data set held back only its own shard's grants: a client made after a wiped shard's slot moved counted the shard that got it (2026-11-30)", Test: "TestClusterWipeThenMoveNewClient", Scripted: true, Short: true,
		Edits: []Edit{{"redlock/marker.go",
			"\treturn y != 0 && mono() < y\n",
			"\treturn false && y != 0 && mono() < y\n"}},
	},
	{
		// caught in 3 to 13 s (52 to 241 acquisitions, 4 runs) since the
		// checker pauses extensions before their send (hook.ExtendSend):
		// before, a late extension rarely met a new holder (5 min 31 s,
		// 6,971 acquisitions, at HEAD quiet; missed in 6 min once)
		Name: "restore-unchecked", Class: "keys put back after a failed extension, over another value (issue 32)", Test: lateExtTest, Short: true,
		Edits: []Edit{
			{"redlock/lock.go",
				"\te.Lost = e.Refused > c.n-c.quorum\n",
				"\tif lost := missing(b, c.n); lost != 0 {\n\t\tl.restore(ctx, w, lost, ttl, t1+int64(ttl))\n\t}\n\te.Lost = e.Refused > c.n-c.quorum\n"},
			{"redlock/lock.go",
				"\treturn lockcmd.AppendSetNXPX(dst, key, value, ttlMillis)\n",
				"\treturn lockcmd.AppendEvalInt(dst, \"return redis.call('set',KEYS[1],ARGV[1],'px',ARGV[2])\", key, value, ttlMillis)\n"},
		},
	},
	{
		Name: "no-drift", Class: "drift allowance removed", Test: safetyTest, Short: true,
		Edits: []Edit{{"redlock/acquire.go",
			"end := t1 + int64(ttl-drift) // validity = end - t2 = ttl - elapsed - drift",
			"end := t1 + int64(ttl)"}},
	},
	{
		Name: "validity-from-end", Class: "validity counted from the end of the SET round trip", Test: safetyTest, Short: true,
		Edits: []Edit{{"redlock/acquire.go",
			"end := t1 + int64(ttl-drift) // validity = end - t2 = ttl - elapsed - drift",
			"end := t1 + (t2 - t1) + int64(ttl-drift)"}},
	},
	{
		Name: "accept-no-validity", Class: "a lock accepted whose validity is already <= 0", Test: safetyTest,
		Edits: []Edit{{"internal/lockrule/lockrule.go",
			"return granted >= quorum && validity > minValidity",
			"return granted >= quorum"}},
	},
	{
		Name: "validity-plus-1ms", Class: "validity 1 ms longer than ttl - elapsed - drift", Test: safetyTest,
		Edits: []Edit{{"redlock/acquire.go",
			"end := t1 + int64(ttl-drift) // validity = end - t2 = ttl - elapsed - drift",
			"end := t1 + int64(ttl-drift+time.Millisecond)"}},
	},
	{
		Name: "extend-after-end", Class: "an extension counted after the validity ended", Test: safetyTest,
		Edits: []Edit{
			{"redlock/lock.go",
				"if err == nil && out.Successes >= c.quorum && t2 < end && t2 < newEnd {",
				"if err == nil && out.Successes >= c.quorum && t2 < newEnd {"},
			{"redlock/lock.go",
				"\tif remaining <= 0 {\n\t\treturn &ExtendError{Resource: l.name(), Expired: true}\n\t}\n",
				"\tif remaining <= 0 {\n\t\tremaining = l.nodeTimeout\n\t}\n"},
		},
	},
	{
		Name: "extend-from-end", Class: "an extension's validity counted from the end of its round trip", Test: safetyTest, Short: true,
		Edits: []Edit{{"redlock/lock.go",
			"newEnd := t1 + int64(ttl-drift)",
			"newEnd := t2 + int64(ttl-drift)"}},
	},
	{
		Name: "failed-extend-lengthens", Class: "a failed extension counted as far as the ttl it asked for", Test: safetyTest,
		Edits: []Edit{{"redlock/lock.go",
			"\tl.set(end, v.ttl, v.ext)\n\treturn e\n",
			"\tif !e.Lost && newEnd > end {\n\t\tend = newEnd\n\t}\n\tl.set(end, v.ttl, v.ext)\n\treturn e\n"}},
	},
	// Issue 16's D1 mutant (a failed Extend whose ctx ended mid-call
	// keeps the old end) is no bug since issue 21: the nodes never shorten
	// a key, so the old end is the rule. Its place is taken by the
	// script that would make it one:
	{
		Name: "extend-may-shorten", Class: "the extend script shortens a key's TTL (the library counts on never-shorten)", Test: safetyTest, Short: true,
		Edits: []Edit{
			{"redlock/scripts/scripts.go",
				"    redis.call(\"pexpire\",KEYS[1],ARGV[2])\n    if left > 0 and redis.call(\"pttl\",KEYS[1]) < left then\n        redis.call(\"pexpire\",KEYS[1],left)\n    end\n    return 1",
				"    redis.call(\"pexpire\",KEYS[1],ARGV[2])\n    return 1"},
			// the fake runs the script natively: the same bug there
			{"fakeserver/cmd_script.go", "\tif left > 0 {\n\t\tnow = n.nowLocked()", "\tif left > 0 && false {\n\t\tnow = n.nowLocked()"},
		},
	},
	{
		// Caught at the end of the run, once the clients are closed (the
		// counts are compared then): not cheap.
		Name: "keepalive-end-unreported", Class: "a keep-alive that expired ends without telling the observer (OpKeepAliveEnd, issue 26)", Test: safetyTest,
		Edits: []Edit{{"redlock/keepalive_sched.go",
			"\t\t\t\ts.end(st, cause)\n\t\t\t\tcontinue\n",
			"\t\t\t\ts.finish(st, cause)\n\t\t\t\tcontinue\n"}},
	},
	{
		// issue 34, R12: the ends are compared per lock (Event.LockID), so
		// a double report is caught whatever the totals say
		Name: "keepalive-end-twice", Class: "a keep-alive's end reported twice to the observer (OpKeepAliveEnd)", Test: safetyTest,
		Edits: []Edit{{"redlock/keepalive_sched.go",
			"\t\t\tif ended { // right after the extension that ended it\n\t\t\t\ts.out.put(end)\n",
			"\t\t\tif ended { // right after the extension that ended it\n\t\t\t\ts.out.put(end)\n\t\t\t\ts.out.put(end)\n"}},
	},
	{
		Name: "keepalive-ignores-holder-extend", Class: "keep-alive not told of the holder's own Extend (issue 21)", Test: safetyTest, Short: true,
		Edits: []Edit{{"redlock/lock.go",
			"\terr := l.extend(ctx, w, ttl, OpExtend)\n\tend, ended := c.ka.extended(st, &l, ttl, err, 0)\n",
			"\terr := l.extend(ctx, w, ttl, OpExtend)\n\tvar end Event\n\tvar ended bool\n"}},
	},
	{
		Name: "no-release-on-failure", Class: "release skipped after a failed acquire (availability)", Test: availTest, Short: true,
		Edits: []Edit{{"redlock/acquire.go",
			"\tt.tooShort = out.Successes >= c.quorum\n\tc.releaseQuick(ctx, w, resource, keys, s.nodeTimeout)\n",
			"\tt.tooShort = out.Successes >= c.quorum\n"}},
	},
	{
		Name: "cleanup-inherits-deadline", Class: "the clean-up releases run under the caller's ended ctx (issue 21)", Test: availTest, Short: true,
		Edits: []Edit{{"redlock/client.go",
			"\tw.dctx.parent = ctx\n\treturn &w.dctx\n",
			"\tw.dctx.parent = ctx\n\treturn ctx\n"}},
	},
	// Fencing (issue 22): TestSafetyFencing's holders write their tokens
	// to a fenced store, zombies write again after a pause past their
	// validity, and the store reports stale writes and tokens that fail
	// to increase.
	{
		Name: "fence-no-writeback", Class: "fencing token = 1 + max read, not written back to a quorum", Test: fenceTest, Short: true,
		Edits: []Edit{{"redlock/acquire.go",
			"\ttoken := top + 1\n",
			"\ttoken := top + 1\n\tif token > 0 {\n\t\treturn uint64(token), tally{}\n\t}\n"}},
	},
	{
		Name: "fence-token-one-reply", Class: "fencing token from one node's counter, not the quorum's", Test: fenceTest,
		Edits: []Edit{{"redlock/acquire.go",
			"\t\ttop = max(top, v)\n",
			"\t\ttop = v\n"}},
	},
	{
		Name: "fence-late-unguarded", Class: "a token written back after the validity, without the holder guard", Test: fenceTest,
		Edits: []Edit{
			{"redlock/scripts/scripts.go",
				"var FenceWriteBack = newScript(\"fence-write-back\", fenceMigrate+`local k = #KEYS / 2\nfor i = 1, k do\n    if redis.call(\"get\",KEYS[i]) ~= ARGV[1] then",
				"var FenceWriteBack = newScript(\"fence-write-back\", fenceMigrate+`local k = #KEYS / 2\nfor i = 1, k do\n    if false then"},
			{"redlock/acquire.go",
				"if err != nil || out.Successes < c.quorum || t3 >= end || time.Duration(end-t3) < s.minValidity {",
				"if err != nil || out.Successes < c.quorum || t3 < 0 {"},
		},
	},
	{
		Name: "fence-guess-unchecked", Class: "the client's token proposal taken without checking that every granted node read a lower counter", Test: fenceTest, Short: true,
		Edits: []Edit{{"redlock/acquire.go",
			"\t\t\tfast = false // this granted node did not take the guess\n",
			"\t\t\t_ = fast // mutant: the proposal is the token regardless\n"}},
	},
	{
		Name: "fence-multi-first-counter", Class: "a multi-resource lock fenced by its first resource's counter only", Test: fenceTest,
		Edits: []Edit{
			{"redlock/scripts/scripts.go",
				"local stale = 0\nfor i = k + 1, 2 * k do\n",
				"local stale = 0\nfor i = k + 1, k + 1 do\n"},
			{"redlock/scripts/scripts.go",
				"    for i = k + 1, 2 * k do\n        redis.call(\"zadd\",KEYS[i],\"gt\",ARGV[3],tag)\n    end\nend\nreturn {1,c,stale}",
				"    for i = k + 1, k + 1 do\n        redis.call(\"zadd\",KEYS[i],\"gt\",ARGV[3],tag)\n    end\nend\nreturn {1,c,stale}"},
			{"redlock/scripts/scripts.go",
				"local t = tonumber(ARGV[2])\nfor i = k + 1, 2 * k do\n",
				"local t = tonumber(ARGV[2])\nfor i = k + 1, k + 1 do\n"},
		},
	},
	// issue 47: counters are sorted sets, a single lock's acquisition three
	// native commands (docs/FENCING.md, "The sorted-set counter"); the
	// checker's fenced run rewrites counters into the string form an
	// earlier version wrote (LegacyEvery), which the clients convert
	{
		Name: "fence-raise-after-set", Class: "a fenced single lock's counter raised after its SET on each node, not before: a key that ends early between them (a clock step, an eviction) lets a later grant read below the raise (a window the checker's schedules do not open: the order is held on a real server's wire)", Test: "TestRealFencedRaiseFirst", Short: true, Scripted: true,
		Edits: []Edit{
			{"redlock/acquire.go",
				"const pipeRaise, pipeSet, pipeRead = 0, 1, 2",
				"const pipeRaise, pipeSet, pipeRead = 1, 0, 2"},
			{"redlock/acquire.go",
				"b.AddExpect(i, w.cmd[read:], mux.ExpectInt)",
				"b.AddExpect(i, w.cmd[:set], mux.ExpectSimple|mux.ExpectNil)\n\t\tb.AddExpect(i, w.cmd[read:], mux.ExpectInt)"},
			{"redlock/acquire.go",
				"b.BroadcastExpect(w.cmd[:set], mux.ExpectSimple|mux.ExpectNil)\n",
				""},
		},
	},
	{
		Name: "fence-tie-counted", Class: "a fenced single lock's raise counted as the only one at the proposal where another member ties it (the counter was not below the proposal before the raise)", Test: "TestFencingTieIsNoWitness", Short: true, Scripted: true,
		Edits: []Edit{{"redlock/acquire.go",
			"below = ok && uint64(v2) < guess",
			"below = ok && uint64(v2) <= guess"}},
	},
	{
		Name: "fence-writeback-absorbs", Class: "a write-back leaves the tag's member where it is when it is already at the token: an acquisition that just raised it to that number reads it as its own raise, and a later grant takes a valid token again", Test: "TestFenceWriteBackMovesEqualTop", Short: true, Scripted: true,
		Edits: []Edit{{"redlock/scripts/scripts.go",
			"    else\n        redis.call(\"zadd\",KEYS[i],\"gt\",math.min(hi + 1, 9007199254740991),tag)",
			"    elseif all[#all-1] ~= tag then\n        redis.call(\"zadd\",KEYS[i],\"gt\",math.min(hi + 1, 9007199254740991),tag)"}},
	},
	{
		Name: "fence-zadd-no-xx", Class: "a failed-over node's acquisition raises its incarnation's member without XX: a stale counter re-tagged current by an unvouched proposal", Test: "TestFencingStaleNotRetagged", Short: true, Scripted: true,
		Edits: []Edit{{"redlock/acquire.go",
			"return lockcmd.AppendZAddGT(dst, resource, strict, int64(w.guess), tag)",
			"return lockcmd.AppendZAddGT(dst, resource, strict && false, int64(w.guess), tag)"}},
	},
	{
		Name: "fence-raise-stale", Class: "the acquire script raises a stale counter to its proposal (a lock of several resources): re-tagged current, unvouched", Test: "TestFencingStaleNotRetagged", Short: true, Scripted: true,
		Edits: []Edit{{"redlock/scripts/scripts.go",
			"if stale == 0 and c < tonumber(ARGV[3]) then\n    for i = k + 1, 2 * k do\n        redis.call(\"zadd\"",
			"if c < tonumber(ARGV[3]) then\n    for i = k + 1, 2 * k do\n        redis.call(\"zadd\""}},
	},
	{
		Name: "fence-top-tag-unchecked", Class: "a single lock's counter read current whatever member holds the top on a failed-over node", Test: "TestFencingStaleAfterFailover", Short: true, Scripted: true,
		Edits: []Edit{{"redlock/acquire.go",
			"a.stale = !isCounter || strict && string(top[0].member) != tag",
			"a.stale = !isCounter || strict && string(top[0].member) != tag && false"}},
	},
	{
		Name: "fence-raise-unseen", Class: "the proposal counted as written where ZADD did not raise (CH 0): the tag's member was already at the proposal, another's raise or write-back", Test: "TestFencingTieIsNoWitness", Short: true, Scripted: true,
		Edits: []Edit{{"redlock/acquire.go",
			"a.wrote = ch == 1 && !a.stale && string(top[0].member) == tag && uint64(v) == guess && below",
			"a.wrote = (ch == 1 || true) && !a.stale && string(top[0].member) == tag && uint64(v) == guess && below"}},
	},
	{
		Name: "fence-migrate-drops-number", Class: "a counter of the string form converted without its number", Test: fenceTest, Short: true,
		Edits: []Edit{{"redlock/scripts/scripts.go",
			"redis.call(\"zadd\",key,n,t or \"\")",
			"redis.call(\"zadd\",key,0,t or \"\")"}},
	},
	{
		Name: "fence-wrongtype-unconverted", Class: "a counter of the string form met by a single lock (WRONGTYPE) never converted: the resource cannot be fenced again", Test: "TestFencingMigratesStringCounters", Short: true, Scripted: true,
		Edits: []Edit{{"redlock/acquire.go",
			"return fencedAns{granted: a.granted, stale: true, migrate: true}, true",
			"return fencedAns{granted: a.granted, stale: true}, true"}},
	},
	{
		Name: "fence-stale-vouches", Class: "a counter replicated before a failover vouches for a token (no incarnation check, issue 32)", Test: "TestFencingStaleAfterFailover", Short: true, Scripted: true,
		Edits: []Edit{{"redlock/acquire.go",
			"\tif f := c.trust.nodes[i].failover.Load(); f != nil && f.tag[1:] == tag {\n",
			"\tif f := c.trust.nodes[i].failover.Load(); f != nil && f.tag[1:] == tag && false {\n"}},
	},
	{
		Name: "fence-strict-lost-on-redial", Class: "a failed-over node's counters read exact again after a redial to the same process (a new, equal incarnation): its ZADD creates the history's member with an unvouched proposal", Test: "TestFencingStrictKept", Short: true, Scripted: true,
		Edits: []Edit{{"redlock/acquire.go",
			"\tif f := c.trust.nodes[i].failover.Load(); f != nil && f.tag[1:] == tag {\n",
			"\tif f := c.trust.nodes[i].failover.Load(); f != nil && f.inc == p {\n"}},
	},
	{
		Name: "fence-unknown-incarnation-counted", Class: "a fenced grant counted on a node that refuses INFO: its failover to an older copy of the counter cannot be told, and a proposal between the copy and the last token is taken", Test: "TestFencingNeedsIncarnation", Short: true, Scripted: true,
		Edits: []Edit{{"redlock/client.go",
			"\treturn !a.stale && w.tags[i] != \"\" && c.m.Incarnation(i) == w.incs[i] && c.trust.nodes[i].hist.Load() == nil\n",
			"\treturn !a.stale && c.m.Incarnation(i) == w.incs[i] && c.trust.nodes[i].hist.Load() == nil\n"}},
	},
	{
		Name: "fence-history-replaced-counted", Class: "a fenced grant counted on a node whose history a grant found replaced on a kept connection (no flush watch) before a set-up judged it: its counters may be an older copy's under the old tag (2026-12-01)", Test: "TestFencingHistoryReplaced", Short: true, Scripted: true,
		Edits: []Edit{{"redlock/client.go",
			"\treturn !a.stale && w.tags[i] != \"\" && c.m.Incarnation(i) == w.incs[i] && c.trust.nodes[i].hist.Load() == nil\n",
			"\treturn !a.stale && w.tags[i] != \"\" && c.m.Incarnation(i) == w.incs[i]\n"}},
	},
	{
		// The checker catches it too: TestSafetyNoWatch (every node
		// without the watch), one overlap after 45,329 acquisitions
		// (10 min; seed 1796094840777793991)
		Name: "history-unread", Class: "no INFO replication after the MGET on a node without the flush watch: a full resync from a former replica of its own, on a kept connection, its marker kept, unseen (2026-12-01)", Test: "TestFlushWatchResyncOwnCopy", Short: true, Scripted: true,
		Edits: []Edit{{"redlock/history.go",
			"\t\tif p == nil || !p.Known || p.WatchesFlushes || c.m.IsCluster(i) {\n",
			"\t\tif true || p == nil || !p.Known || p.WatchesFlushes || c.m.IsCluster(i) {\n"}},
	},
	{
		Name: "history-unchecked", Class: "the history a grant's INFO replication shows not compared with the judged one: a resync's new history on a node without the flush watch counted (2026-12-01)", Test: "TestFlushWatchResyncOwnCopy", Short: true, Scripted: true,
		Edits: []Edit{{"redlock/history.go",
			"\tif v, ok := replIDOf(r); ok && string(v) == want {\n",
			"\tif v, ok := replIDOf(r); ok || string(v) == want {\n"}},
	},
	{
		Name: "fence-promoted-exact", Class: "a node first met after its promotion read exact (its counters came by replication): a client that did not see the failover creates the history's member with an unvouched proposal", Test: "TestFencingStrictKept", Short: true, Scripted: true,
		Edits: []Edit{{"redlock/trust.go",
			"v.Failover = p.Promoted\n",
			"v.Failover = p.Promoted && false\n"}},
	},
	{
		Name: "fence-tag-run-id", Class: "fencing counters tagged with the run_id, which a process keeps when it is promoted again: a failback's counters, behind what it gave out, vouch for a token", Test: "TestFencingStaleAfterFailback", Short: true, Scripted: true,
		Edits: []Edit{{"redlock/acquire.go",
			"\tif p.ReplID != \"\" {\n\t\treturn p.ReplID\n",
			"\tif p.ReplID != \"\" && false {\n\t\treturn p.ReplID\n"}},
	},
	{
		// issue 34, R12 a: the write-back script answers 0 where its guard
		// refused (the lock's key no longer holds the value); a refusal
		// counted as a witness hands out a token short of the quorum
		Name: "fence-refusal-witness", Class: "a fencing write-back refused by its guard (reply 0) counted as a witness", Test: "TestFencingWriteBackRefusedIsNoWitness", Short: true, Scripted: true,
		Edits: []Edit{{"redlock/acquire.go",
			"out, err := c.m.Do(ctx, b, mux.Policy{Quorum: c.quorum, Success: isOne, Timeout: timeout})",
			"out, err := c.m.Do(ctx, b, mux.Policy{Quorum: c.quorum, Success: isInt, Timeout: timeout})"}},
	},
	{
		// a fenced grant whose write-back fell short ends Acquire (the
		// retries WithTries asked for are not made): liveness, so a
		// scripted test, not the checker
		Name: "fence-failed-not-retried", Class: "a fenced grant whose token write-back fell short not retried by Acquire", Test: "TestFencingWriteBackFailedIsRetried", Scripted: true,
		Edits: []Edit{{"redlock/acquire.go",
			"if err != nil || l.st != nil || (t.unreachable && !s.noFailFast) {",
			"if err != nil || l.st != nil || t.fenceFailed || (t.unreachable && !s.noFailFast) {"}},
	},
	{
		// KeepAlive starts the scheduler before its closed check, outside
		// the scheduler's lock: racing Close, it leaves one running
		Name: "keepalive-start-after-close", Class: "KeepAlive racing Close starts a keep-alive scheduler nobody stops", Test: "TestKeepAliveRacingClose", Scripted: true,
		Edits: []Edit{{"redlock/keepalive.go",
			"\ts := &c.ka\n\thctx, cancel := context.WithCancelCause(ctx)\n",
			"\ts := &c.ka\n\ts.start()\n\thctx, cancel := context.WithCancelCause(ctx)\n"}},
	},
	{
		Name: "multi-first-key-only", Class: "a multi-resource acquisition that checks only its first key (not all or nothing)", Test: safetyTest,
		Edits: []Edit{{"redlock/scripts/scripts.go",
			"for i = 1, #KEYS do\n    if redis.call(\"exists\",KEYS[i]) == 1 then",
			"for i = 1, 1 do\n    if redis.call(\"exists\",KEYS[i]) == 1 then"}},
	},
	// The mux mutant targets the pipelined mux (mux/ingest.go): replies are
	// matched in FIFO order to slots that name their batch and its call
	// generation; a slot whose call has ended is abandoned and its reply
	// dropped. "Owed replies forgotten" has no one-line equivalent there
	// (there is no owed counter: an abandoned slot stays in the FIFO until
	// its reply comes).
	{
		// issue 34, R12 b: io_uring reads a receive only while its link is
		// still the connection's (live()); without the check, a replaced
		// connection's late receive is read into the current connection
		Name: "uring-replaced-receive", Class: "io_uring reads a replaced connection's receive into the current connection (live() guard dropped)", Test: "TestURingReplacedLinkReceiveDropped", Short: true, Scripted: true,
		Pkg: "./mux", Env: []string{"REDMUX_TEST_TRANSPORT=io_uring"},
		Edits: []Edit{{"mux/link_uring_linux.go",
			"live := func() bool { return cn != nil && cn.current() == link(l) }",
			"live := func() bool { return cn != nil }"}},
	},
	{
		// issue 47: a claimed writer yields between two writes still holding
		// the writer role (inWrite), so a detach during the yield leaves the
		// role and the socket's close to it; without it, a caller that
		// finds the role free writes beside the yielding writer
		Name: "writer-yield-drops-role", Class: "the claimed writer's yield between two writes gives up the writer role: a detach meanwhile lets a second writer in beside it", Test: "TestWriterYieldSurvivesDetach", Short: true, Scripted: true,
		Pkg: "./mux",
		Edits: []Edit{{"mux/conn.go",
			"\t\t\tcn.inWrite = true\n\t\t\tcn.mu.Unlock()\n\t\t\twriterYield()\n",
			"\t\t\tcn.mu.Unlock()\n\t\t\twriterYield()\n"}},
	},
	{
		// issue 47: only the first socket detached under a writer is left
		// for it to close; a later one (redialled and broken during the
		// yield) left to it too is never closed: 2 fds leak per double break
		Name: "double-detach-deferred", Class: "a socket redialled and detached again during the writer's yield left to the writer, which closes only its own: its fd leaks", Test: "TestWriterYieldSurvivesDetach", Short: true, Scripted: true,
		Pkg: "./mux",
		Edits: []Edit{{"mux/conn.go",
			"\t\tif cn.inWrite && cn.deferred == nil {\n",
			"\t\tif cn.inWrite {\n"}},
	},
	{
		// The generation check replaced by the bounds check a developer
		// would add after the index panic that dropping it alone can cause
		// (a late reply to a command the later call does not have): so the
		// mutant never crashes, and only the checker can find it.
		Name: "mux-wrong-call", Class: "a late reply matched to a later call of the same batch (generation check dropped)", Test: safetyTest,
		Edits: []Edit{
			{"mux/ingest.go",
				"\tif cl.gen == gen && cl.live {\n\t\tfor i, s := range slots {\n\t\t\tif s.k < 0 {",
				"\tif cl.live {\n\t\tfor i, s := range slots {\n\t\t\tif s.k < 0 || s.k >= cl.nodes[cn.node].n {"},
			{"mux/ingest.go", "\t\tafter.take(cn, b, gen, buf)\n", "\t\tif cl.gen == gen {\n\t\t\tafter.take(cn, b, gen, buf)\n\t\t}\n"},
		},
	},
}
