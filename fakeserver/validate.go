package fakeserver

import (
	"bytes"
	"math"
)

// Limits on what one client may send. They keep a node's memory bounded no
// matter what a client writes: a request over a limit gets a protocol error
// reply and the connection is closed, as Redis does.
const (
	// MaxBulkLen is the largest bulk string accepted in a request (Redis
	// allows 512 MiB; the fake keeps memory small).
	MaxBulkLen = 1 << 20
	// MaxRequestBytes is the largest total size of one multibulk request.
	MaxRequestBytes = 4 << 20
	// MaxArgs is the largest argument count of one request. Redis allows
	// any int; with MaxRequestBytes no request can have more than 262,144.
	MaxArgs = 1024 * 1024
	// MaxInlineLen is the longest inline (telnet-style) request line, as
	// Redis's PROTO_INLINE_MAX_SIZE ("Protocol error: too big inline
	// request").
	MaxInlineLen = 64 * 1024
	// Before a client has authenticated on a node that requires it, Redis
	// (and the fake) accept at most 10 arguments of at most 16 KB each
	// ("Protocol error: unauthenticated multibulk length" / "... bulk
	// length").
	maxUnauthArgs    = 10
	maxUnauthBulkLen = 16384
	maxNumDigits     = 19
)

// validator states.
const (
	vsStart = iota
	vsInline
	vsInlineNUL // an inline request with a NUL before its line end
	vsCount
	vsCountLF
	vsDollar
	vsBulkLen
	vsBulkLenLF
	vsBulkData
	vsBulkCR
	vsBulkLF
)

// validator checks a client's byte stream, one request at a time, before
// redcon's reader sees it. redcon's reader panics or grows without bound on
// some inputs (negative or huge lengths); everything that passes this
// validator is well formed and within the limits above.
type validator struct {
	st       int
	num      int64
	neg      bool
	digits   int
	args     int64 // remaining bulk arguments in the current request
	bulk     int64 // remaining bytes of the current bulk payload
	size     int64 // bytes of the current request so far
	header   bool  // multibulk header complete: bytes may be handed out
	empty    bool  // the completed request is "*0" or "*-N" (ignored, as Redis does)
	inline   bool  // the completed request is an inline line (rbuf holds it whole)
	inlineSz int
}

// protoError is a client protocol violation; its text follows Redis's
// "Protocol error: ..." replies.
type protoError string

func (e protoError) Error() string { return "Protocol error: " + string(e) }

// step scans b from the validator's current state. It returns the number of
// bytes consumed and done=true when a request ended exactly there; with
// done=false all of b was consumed and the request is still incomplete.
// With unauth set the client has not authenticated on a node that requires
// it, and Redis's smaller limits for such clients apply.
func (v *validator) step(b []byte, unauth bool) (n int, done bool, err error) {
	for n < len(b) {
		c := b[n]
		switch v.st {
		case vsStart:
			v.size = 0
			if c == '*' {
				v.st = vsCount
				v.num, v.neg, v.digits = 0, false, 0
				n++
				continue
			}
			v.st = vsInline
			v.inlineSz = 0
		case vsInline, vsInlineNUL:
			return v.inlineStep(b, n)
		case vsCount, vsBulkLen:
			n++
			switch {
			case c >= '0' && c <= '9':
				// canonical integers only, as Redis's string2ll: no
				// leading zero, no "-0"
				if (v.digits == 1 && v.num == 0) || (c == '0' && v.digits == 0 && v.neg) {
					return n, false, v.lenErr()
				}
				v.digits++
				d := int64(c - '0')
				// 19 digits can exceed int64 (9999999999999999999):
				// Redis's string2ll refuses such a number, and a wrapped
				// one would turn into a negative length
				if v.digits > maxNumDigits || v.num > (math.MaxInt64-d)/10 {
					return n, false, v.lenErr()
				}
				v.num = v.num*10 + d
			case c == '-' && v.digits == 0 && !v.neg:
				v.neg = true
			case c == '\r' && v.digits > 0:
				v.st++ // vsCountLF or vsBulkLenLF
			default:
				return n, false, v.lenErr()
			}
		case vsCountLF:
			n++
			if c != '\n' {
				return n, false, protoError("invalid multibulk length")
			}
			if v.neg || v.num == 0 {
				v.st = vsStart
				v.empty = true
				return n, true, nil
			}
			if v.num > MaxArgs {
				return n, false, protoError("invalid multibulk length")
			}
			if unauth && v.num > maxUnauthArgs {
				return n, false, protoError("unauthenticated multibulk length")
			}
			v.args = v.num
			v.header = true
			v.st = vsDollar
		case vsDollar:
			n++
			if c != '$' {
				return n, false, protoError("expected '$', got '" + string(rune(c)) + "'")
			}
			v.st = vsBulkLen
			v.num, v.neg, v.digits = 0, false, 0
		case vsBulkLenLF:
			n++
			if c != '\n' || v.neg || v.num > MaxBulkLen {
				return n, false, protoError("invalid bulk length")
			}
			if unauth && v.num > maxUnauthBulkLen {
				return n, false, protoError("unauthenticated bulk length")
			}
			v.size += v.num + 16
			if v.size > MaxRequestBytes {
				return n, false, protoError("request larger than the fake server's limit")
			}
			v.bulk = v.num
			v.st = vsBulkData
			if v.bulk == 0 {
				v.st = vsBulkCR
			}
		case vsBulkData:
			k := int64(len(b) - n)
			if k > v.bulk {
				k = v.bulk
			}
			n += int(k)
			v.bulk -= k
			if v.bulk == 0 {
				v.st = vsBulkCR
			}
		case vsBulkCR:
			n++
			if c != '\r' {
				return n, false, protoError("invalid bulk length")
			}
			v.st = vsBulkLF
		case vsBulkLF:
			n++
			if c != '\n' {
				return n, false, protoError("invalid bulk length")
			}
			v.args--
			if v.args == 0 {
				v.st = vsStart
				return n, true, nil
			}
			v.st = vsDollar
		}
	}
	return n, false, nil
}

// inlineStep scans an inline (telnet-style) request from b[n:] in the
// states vsInline and vsInlineNUL; its results are step's.
func (v *validator) inlineStep(b []byte, n int) (int, bool, error) {
	if v.st == vsInline {
		i := bytes.IndexByte(b[n:], '\n')
		switch z := bytes.IndexByte(b[n:], 0); {
		case z >= 0 && (i < 0 || z < i):
			// Redis looks for the line end with strchr, which stops
			// at a NUL: this request never completes, and the client
			// gets the size error once it has sent 64 KB.
			v.inlineSz += z
			v.st = vsInlineNUL
			n += z
		case i < 0:
			v.inlineSz += len(b) - n
			if v.inlineSz > MaxInlineLen {
				return n, false, protoError("too big inline request")
			}
			return len(b), false, nil
		default:
			v.inlineSz += i
			if v.inlineSz > MaxInlineLen {
				return n, false, protoError("too big inline request")
			}
			n += i + 1
			v.st = vsStart
			v.inline = true
			return n, true, nil
		}
	}
	// vsInlineNUL: nothing completes the request; count its bytes
	v.inlineSz += len(b) - n
	if v.inlineSz > MaxInlineLen {
		return len(b), false, protoError("too big inline request")
	}
	return len(b), false, nil
}

func (v *validator) lenErr() error {
	if v.st == vsCount {
		return protoError("invalid multibulk length")
	}
	return protoError("invalid bulk length")
}
