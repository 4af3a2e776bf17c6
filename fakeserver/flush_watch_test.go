package fakeserver

import (
	"strconv"
	"testing"
)

// FLUSHDB and FLUSHALL fail only the transactions that WATCHed a key they
// removed, as redis-server 7.0.15 (its replies below): a watched key that
// did not exist, or lives in a database FLUSHDB left alone, does not.
func TestFlushTouchesOnlyExistingWatchedKeys(t *testing.T) {
	n := startNode(t, Config{})
	a, b := dial(t, n.Addr()), dial(t, n.Addr())
	for _, tc := range []struct {
		flush, db string
		exists    bool
		want      string
	}{
		{"FLUSHALL", "0", false, "*1\r\n+PONG\r\n"},
		{"FLUSHALL", "0", true, "*-1\r\n"},
		{"FLUSHDB", "0", false, "*1\r\n+PONG\r\n"},
		{"FLUSHDB", "0", true, "*-1\r\n"},
		{"FLUSHDB", "1", true, "*1\r\n+PONG\r\n"},
	} {
		if tc.exists {
			eqReply(t, "set", a.do("SET", "k", "v"), okReply)
		}
		eqReply(t, "watch", a.do("WATCH", "k"), okReply)
		eqReply(t, "multi", a.do("MULTI"), okReply)
		eqReply(t, "queued", a.do("PING"), "+QUEUED\r\n")
		eqReply(t, "select", b.do("SELECT", tc.db), okReply)
		eqReply(t, tc.flush, b.do(tc.flush), okReply)
		eqReply(t, tc.flush+" in db "+tc.db+", key existed: "+strconv.FormatBool(tc.exists), a.do("EXEC"), tc.want)
		eqReply(t, "select 0", b.do("SELECT", "0"), okReply)
		eqReply(t, "flushall", b.do("FLUSHALL"), okReply)
	}
}
