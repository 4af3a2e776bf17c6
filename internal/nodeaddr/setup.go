package nodeaddr

import (
	"net"
	"time"
)

// Script is a Lua script a connection's set-up loads (mux.Script's fields).
type Script struct {
	Text string // exact Lua source
	SHA  string // lower-case hex SHA1 of Text ("": the reply is not checked)
}

// Setup runs a node's connection set-up on nc exactly as mux.New's
// connections run it: AUTH (n's user and password), HELLO 3 (n.RESP3),
// SELECT (n.DB), CLIENT SETNAME (name, or mux.DefaultClientName when empty)
// and SCRIPT LOAD of every script, written in one go; every reply is
// checked (a script's SHA too) and a byte past the last reply is an error.
// It is for code that reaches the same nodes on connections of its own
// (redmux-bench's seq and fanout strategies), so that they are set up as
// mux's. A refused authentication wraps mux.ErrAuth; no error contains the
// password. nc's deadlines are left set to deadline.
//
// The one implementation is mux's (mux imports this package, not the
// other way round): mux sets Setup when it is initialised, so Setup is nil
// in a program that does not link mux in.
var Setup func(nc net.Conn, n Node, name string, scripts []Script, deadline time.Time) error
