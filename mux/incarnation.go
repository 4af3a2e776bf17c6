package mux

import (
	"bytes"
	"math"
	"strconv"
	"time"

	"github.com/redmux/redmux/resp"
)

// maxUptimeSeconds is the largest uptime_in_seconds a time.Duration holds.
const maxUptimeSeconds = int64(math.MaxInt64 / time.Second)

// Incarnation is one life of a node's data set, as the node reported it
// when a connection to it was set up (Config.Incarnations): the server
// process (RunID, new at every start) and its replication history
// (ReplID, new when a replica is promoted or a server starts without its
// data). docs/OPERATIONS.md says what a change means for a lock.
type Incarnation struct {
	// Known: the node answered INFO; when false, Err says why and the
	// fields below are empty.
	Known bool
	Err   string
	// RunID is INFO server's run_id; Uptime its uptime_in_seconds (whole
	// seconds, rounded down by the server).
	RunID  string
	Uptime time.Duration
	// Role is INFO replication's role ("master" or "slave"); ReplID its
	// master_replid, ReplID2 master_replid2 (the history this one
	// continues after a promotion; all zeros when none), and Promoted
	// says second_repl_offset was not -1: this process was a replica
	// that was promoted (it may lack the old primary's last writes).
	Role     string
	ReplID   string
	ReplID2  string
	Promoted bool
	// WatchesFlushes: the connection's set-up turned on the flush watch
	// (Config.WatchFlushes); false where the node refused it.
	WatchesFlushes bool
	// Seen is when the set-up read the replies (after INFO ran on the
	// node): Seen - Uptime is no earlier than the process's start.
	Seen time.Time
}

// Same reports whether a and b are the same incarnation: the same
// process serving the same replication history.
func (a *Incarnation) Same(b *Incarnation) bool {
	return a.Known && b.Known && a.RunID == b.RunID && a.ReplID == b.ReplID
}

// Start is the earliest the node's process can have started, as far as
// its uptime says.
func (a *Incarnation) Start() time.Time { return a.Seen.Add(-a.Uptime) }

// Incarnation returns node i's incarnation as learned by the set-up of its
// newest connection, or nil before any set-up succeeded (or when
// Config.Incarnations is off). Every set-up stores a new value before its
// connection carries a command, so a reply read after this returns came
// from the incarnation returned or a later one. Compare with Same: a redial
// to the same process returns a new, equal value.
func (c *Client) Incarnation(i int) *Incarnation {
	if i < 0 || i >= c.n {
		return nil
	}
	return c.nodes[i].inc.Load()
}

// TracksIncarnations reports whether Config.Incarnations was on.
func (c *Client) TracksIncarnations() bool { return c.cfg.Incarnations }

// infoStep says which INFO section a set-up step asked for.
const (
	infoServer = 1 + iota
	infoReplication
)

// learnInfo reads an INFO reply (a bulk or verbatim string of
// "field:value" lines) into inc. An error reply leaves inc unknown with
// its text (cleaned of secrets, cleanText); it does not fail the set-up.
func learnInfo(inc *Incarnation, section int, rep resp.Reply, secrets ...string) {
	if rep.IsError() {
		if inc.Err == "" {
			inc.Err = "INFO refused: " + cleanText(string(rep.Data), maxQuoted, secrets)
		}
		return
	}
	for data := infoText(rep); len(data) > 0; {
		var k, v []byte
		var ok bool
		if k, v, data, ok = nextInfoField(data); !ok {
			continue
		}
		switch section {
		case infoServer:
			switch string(k) {
			case "run_id":
				inc.RunID = string(v)
			case "uptime_in_seconds":
				// an uptime that is not a whole number of seconds a
				// Duration can hold (9223372037 s would wrap to -292
				// years) stays 0: read as "just started", the safe side
				if s, err := strconv.ParseInt(string(v), 10, 64); err == nil && s >= 0 && s <= maxUptimeSeconds {
					inc.Uptime = time.Duration(s) * time.Second
				}
			}
		case infoReplication:
			switch string(k) {
			case "role":
				inc.Role = string(v)
			case "master_replid":
				inc.ReplID = string(v)
			case "master_replid2":
				inc.ReplID2 = string(v)
			case "second_repl_offset":
				inc.Promoted = string(v) != "-1"
			}
		}
	}
}

// infoText is the text of an INFO reply: a bulk string, or RESP3's
// verbatim string without its format.
func infoText(rep resp.Reply) []byte {
	if rep.Type == resp.TypeVerbatim {
		return rep.VerbatimText()
	}
	return rep.Data
}

// nextInfoField reads the first line of INFO text: its field and value
// (ok false for a line without ':', such as "# Server") and the rest.
func nextInfoField(data []byte) (k, v, rest []byte, ok bool) {
	line := data
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		line, rest = data[:i], data[i+1:]
	}
	k, v, ok = bytes.Cut(bytes.TrimRight(line, "\r"), []byte{':'})
	return k, v, rest, ok
}

// InfoField returns the value of field in an INFO reply (a bulk or
// verbatim string of "field:value" lines), aliasing the reply's bytes;
// ok is false for an error, a null or a reply without the field.
func InfoField(rep resp.Reply, field string) (v []byte, ok bool) {
	if rep.IsError() || rep.Null {
		return nil, false
	}
	for data := infoText(rep); len(data) > 0; {
		var k []byte
		if k, v, data, ok = nextInfoField(data); ok && string(k) == field {
			return v, true
		}
	}
	return nil, false
}

// finish marks inc known when INFO told the run_id, else unknown.
func (inc *Incarnation) finish(seen time.Time) {
	inc.Seen = seen
	if inc.Err != "" || inc.RunID == "" {
		if inc.Err == "" {
			inc.Err = "INFO server has no run_id"
		}
		*inc = Incarnation{Err: inc.Err, Seen: seen}
		return
	}
	inc.Known = true
}
