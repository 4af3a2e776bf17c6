// Package resp is a RESP2 and RESP3 codec for Redis: append-style encoders
// and an incremental, zero-copy parser. It does no I/O and has no
// dependencies.
//
// # Encoding
//
// Every encoder appends to a caller-owned buffer and returns it, so a
// connection can build a whole pipeline in one reused slice without
// allocating:
//
//	buf = resp.AppendSetNXPX(buf[:0], "lock:orders", value[:], 10000)
//	buf = resp.AppendEvalSHA(buf, releaseSHA, "lock:orders", value[:])
//
// Besides the generic AppendCommand, there are encoders for the exact frames
// of the lock hot path (SET key value NX PX ms; EVALSHA sha 1 key value [ms])
// and for every reply type, RESP3 included, for servers and tests.
//
// # Parsing
//
// Parse (or a Parser with custom limits) reads one frame from the front of a
// buffer and returns a Reply whose slices point into that buffer:
//
//	r, n, err := p.Parse(buf)
//	switch {
//	case err == resp.ErrIncomplete: // read more bytes, parse again from the same start
//	case err != nil:                // *ProtocolError: close the connection
//	default:                        // use r, then drop buf[:n]
//	}
//
// ErrIncomplete ("need more bytes") is never confused with invalid input.
// Invalid input, negative lengths other than the -1 nulls, overflowing
// numbers, unknown type bytes, over-long lines, and lengths or nesting above
// the Parser's limits are all reported as a *ProtocolError that says what
// and at which byte, before any memory would be reserved for the frame. The
// parser never panics, loops or reads past the buffer.
//
// Aggregates are validated whole but not materialised: walk them with
// Reply.Iter, which re-reads the already validated bytes without allocating.
// RESP3 attributes ahead of a reply are folded into Reply.Attr (read them
// with Reply.Attribute); push frames come back as replies of TypePush for
// the caller to route.
//
// The helpers IsOK, IsNil, Int, ErrorPrefix and HasErrorPrefix answer the
// questions of the lock path (was it +OK, nil, :1, NOSCRIPT?) without
// allocating. Value converts a reply to plain Go values for tools and tests.
//
// Streamed RESP3 strings and aggregates ($?, *?), which Redis never sends,
// are reported as protocol errors.
package resp
