package mux

import "github.com/redmux/redmux/resp"

// Success predicates for Policy.Success, for the replies of the lock
// commands. They are package-level functions, so passing one to Do
// allocates nothing (a closure that captures variables would).

// ReplyOK counts a +OK status reply (SET NX PX that set the key).
func ReplyOK(_ int, r resp.Reply) bool { return r.IsOK() }

// ReplyOne counts the integer 1 (a compare-and-delete or
// compare-and-pexpire script that found the caller's value).
func ReplyOne(_ int, r resp.Reply) bool {
	v, ok := r.Int()
	return ok && v == 1
}

// ReplyInt counts any integer reply.
func ReplyInt(_ int, r resp.Reply) bool {
	_, ok := r.Int()
	return ok
}
