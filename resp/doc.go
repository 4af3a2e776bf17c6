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
//	buf = resp.AppendCommand(buf[:0], "GET", "lock:orders")
//	buf = resp.AppendArrayHeader(buf, 2)
//	buf = resp.AppendBulkString(buf, "PTTL")
//	buf = resp.AppendBulk(buf, key)
//
// Commands are arrays of bulk strings: AppendCommand (or AppendCommandBytes)
// writes a whole one; AppendArrayHeader followed by AppendBulk,
// AppendBulkString and AppendBulkInt builds one argument at a time without
// allocating. There are encoders for every reply type too, RESP3 included,
// for servers and tests. The codec knows no command: the lock's own command
// shapes are built by the lock (internal/lockcmd) from these helpers.
//
// AppendSimpleString and AppendError write one line: a CR or LF in their
// text is written as a space, so the frame stays valid; AppendBulkString and
// AppendBulkError carry any bytes.
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
