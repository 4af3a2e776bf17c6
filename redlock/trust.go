package redlock

import (
	"time"
)

// This file is the trust decision of docs/OPERATIONS.md as pure functions
// over plain values: no locks, atomics or clocks inside (the caller reads
// the clock and passes instants). incarnation.go and marker.go store the
// verdicts and emit the events; TestTrustTable (trust_test.go) holds one
// commented row per rule.

// uptimeSlack is how much Redis's uptime_in_seconds can overstate a
// process's age: it is the difference of two whole-second wall clock
// stamps (rule 2).
const uptimeSlack = time.Second

// incObs is a node's incarnation as a set-up reported it (mux.Incarnation
// in plain values), or none (Nil: no set-up yet).
type incObs struct {
	Nil      bool
	Known    bool // INFO answered
	RunID    string
	ReplID   string
	Promoted bool          // second_repl_offset >= 0
	Seen     int64         // mono ns: when the set-up read INFO's reply
	Uptime   time.Duration // uptime_in_seconds
}

// incPrev is what the client knew of the node before: the last known
// incarnation, if any.
type incPrev struct {
	Known  bool
	RunID  string
	ReplID string
}

// incRules are the client's declarations that bear on one judgement.
type incRules struct {
	Persistent bool // WithNodesPersistEveryWrite
	// AtStart: this is the incarnation the node had when New returned,
	// under WithTrustNodesAtStart: trusted as it is
	AtStart bool
}

// incVerdict is what an incarnation means for the node's trust.
type incVerdict struct {
	Quarantine bool
	From       int64 // mono ns the incarnation is trusted from (with Quarantine)
	Cause      error // ErrNodeRestarted, ErrNodeFailover, ErrIncarnationUnknown, or nil
	Failover   bool  // it began with a failover: counters from before are stale
	Prev       incPrev
	Changed    bool // a known incarnation replaced another known one
}

// latestStart is the latest instant a process that reported uptime at
// seen can have started: uptime overstates its age by up to uptimeSlack,
// and seen is after the server computed it (rule 2); and no later than
// seen itself.
// A negative uptime (no set-up reports one) counts as 0: it must never
// move the start after seen, nor wrap it around to long ago.
func latestStart(seen int64, uptime time.Duration) int64 {
	if uptime < 0 {
		uptime = 0
	}
	//mutant:uptime-rounded-down
	return min(seen, seen-int64(uptime)+int64(uptimeSlack))
}

// judgeIncarnation applies rules 1 and 2 of docs/OPERATIONS.md to node's
// incarnation p, given what was known before.
func judgeIncarnation(prev incPrev, p incObs, r incRules) incVerdict {
	v := incVerdict{Prev: prev}
	switch {
	case p.Nil:
	case !p.Known:
		// INFO refused (an ACL, a renamed command): this set-up may be a
		// new process's, one that came back from an older snapshot or a
		// lagging replica with its marker kept (rule 4 sees none of
		// that); quarantined from this set-up, each time, unless it is
		// what New saw under WithTrustNodesAtStart. What it told before,
		// if anything, is forgotten: it is judged as at first sight if it
		// tells again.
		v.Cause, v.Prev = ErrIncarnationUnknown, incPrev{}
		//mutant:unknown-setup-trusted
		if !r.AtStart {
			v.Quarantine, v.From = true, p.Seen
		}
	case !prev.Known:
		v.Prev = incPrev{Known: true, RunID: p.RunID, ReplID: p.ReplID}
		// a promoted replica's counters came by replication, as after a
		// failover seen: stale for this client too, as for those that saw
		// it (docs/FENCING.md, "Raise first", attack 4)
		//mutant:fence-promoted-exact
		v.Failover = p.Promoted
		// a promoted replica lost what replication had not carried,
		// whatever its disk: persistence lifts restarts' quarantine only
		if !r.AtStart && (!r.Persistent || p.Promoted) {
			v.Quarantine, v.From, v.Cause = true, latestStart(p.Seen, p.Uptime), ErrNodeRestarted
		}
	case prev.RunID == p.RunID && prev.ReplID == p.ReplID:
	default:
		v.Prev = incPrev{Known: true, RunID: p.RunID, ReplID: p.ReplID}
		v.Changed = true
		// the same process with a new history, or a new process that was
		// promoted: a failover; a new process otherwise: a restart
		switch {
		case prev.RunID == p.RunID || p.Promoted:
			v.Quarantine, v.From, v.Cause, v.Failover = true, p.Seen, ErrNodeFailover, true
		case r.Persistent:
			v.Cause = ErrNodeRestarted
		default:
			v.Quarantine, v.From, v.Cause = true, latestStart(p.Seen, p.Uptime), ErrNodeRestarted
		}
	}
	return v
}

// markerObs is a node's data-set marker as an acquisition's MGET read it
// (rule 4): the marker's id, if present.
type markerObs struct {
	Present bool
	ID      string
}

// markerAction is what the client does about a node's marker.
type markerAction uint8

const (
	markKeep      markerAction = iota // the accepted id: nothing to do
	markAccept                        // first sight: take the id
	markAcceptNew                     // another id: take it and quarantine the node from now
	markInit                          // no marker: create one, with its young key
	markReinit                        // a copied marker: replace it (compare-and-set), with a young key
)

// judgeMarker applies rule 4's table to node's marker m, given the id the
// client accepted for it (has: one was) and whether m's id is another
// node's too (duplicate: a data set copied from a sibling).
func judgeMarker(accepted string, has bool, m markerObs, duplicate bool) markerAction {
	switch {
	case !m.Present:
		return markInit
	case has && m.ID == accepted:
		return markKeep
	//mutant:copied-data-set-accepted
	case duplicate:
		return markReinit
	case !has:
		return markAccept
	}
	return markAcceptNew
}

// quarantinePeriod is the quarantine Q of rules 2, 4 and 5: the largest
// of the TTL record read from the nodes, the largest TTL this client used
// and WithQuarantine (0: unset).
func quarantinePeriod(record, used, configured time.Duration) time.Duration {
	//mutant:ttl-record-ignored
	return max(record, used, configured)
}
