package resp

import "bytes"

// Parser parses RESP2 and RESP3 frames from a byte buffer, one at a time,
// without copying or allocating. A zero Parser uses the Default* limits; a
// field set to a positive value replaces its default. A Parser holds no
// state between calls and may be shared by goroutines.
type Parser struct {
	MaxBulkLen      int64 // largest bulk payload; default DefaultMaxBulkLen
	MaxAggregateLen int64 // largest aggregate element count; default DefaultMaxAggregateLen
	MaxDepth        int   // deepest aggregate nesting; default DefaultMaxDepth
	MaxLineLen      int   // longest simple line; default DefaultMaxLineLen
}

// limits is a Parser with every default resolved.
type limits struct {
	maxBulk, agg int64
	depth        int
	line         int
}

func (p *Parser) limits() limits {
	l := limits{DefaultMaxBulkLen, DefaultMaxAggregateLen, DefaultMaxDepth, DefaultMaxLineLen}
	if p == nil {
		return l
	}
	if p.MaxBulkLen > 0 {
		l.maxBulk = p.MaxBulkLen
	}
	if p.MaxAggregateLen > 0 {
		l.agg = p.MaxAggregateLen
	}
	if p.MaxDepth > 0 {
		l.depth = p.MaxDepth
	}
	if p.MaxLineLen > 0 {
		l.line = p.MaxLineLen
	}
	return l
}

// Parse parses the first complete frame in b with the default limits. See
// (*Parser).Parse.
func Parse(b []byte) (Reply, int, error) {
	var p Parser
	return p.Parse(b)
}

// Parse parses the first frame in b. On success it returns the reply, a view
// into b that stays valid as long as b's bytes are not overwritten, and the
// number of bytes the frame used (the next frame starts at b[n:]).
//
// If b holds only a prefix of a valid frame, Parse returns ErrIncomplete and
// n == 0: append more bytes and call again with the same start. If b cannot
// be the start of a valid frame, or a limit is exceeded, it returns a
// *ProtocolError (errors.Is(err, ErrProtocol)) and n == 0; the connection
// should then be closed. Limits are checked on the declared lengths before
// the payload has arrived, so a caller that grows its buffer to fit a frame
// never grows past them.
//
// Leading RESP3 attributes are folded into the reply: Reply.Attr holds their
// raw bytes and the reply is the frame that follows them.
func (p *Parser) Parse(b []byte) (Reply, int, error) {
	l := p.limits()
	var r Reply
	n, err := l.parse(b, 0, 0, &r)
	if err != nil {
		return Reply{}, 0, err
	}
	return r, n, nil
}

// Skip returns the size of the first complete frame in b without building a
// Reply; errors as for Parse.
func (p *Parser) Skip(b []byte) (int, error) {
	l := p.limits()
	n, err := l.parse(b, 0, 0, nil)
	if err != nil {
		return 0, err
	}
	return n, nil
}

// maxHeaderLen bounds the length line of bulk and aggregate headers: a sign
// and 19 digits fit in 20 bytes.
const maxHeaderLen = 21

// parse parses one frame at b[off:], filling r (if non-nil), and returns the
// offset just past it.
func (l *limits) parse(b []byte, off, depth int, r *Reply) (int, error) {
	start := off
	if off >= len(b) {
		return 0, ErrIncomplete
	}
	// Attributes ahead of the reply.
	for b[off] == TypeAttribute {
		end, err := l.aggregate(b, off, depth, TypeAttribute, nil)
		if err != nil {
			return 0, err
		}
		off = end
		if off >= len(b) {
			return 0, ErrIncomplete
		}
	}
	t := b[off]
	if r != nil {
		*r = Reply{Type: t}
		if off > start {
			r.Attr = b[start:off:off]
		}
	}
	var end int
	var err error
	switch t {
	case TypeSimpleString, TypeError:
		end, err = l.simple(b, off, r)
	case TypeInteger:
		end, err = l.integer(b, off, r)
	case TypeBulkString, TypeBulkError, TypeVerbatim:
		end, err = l.bulk(b, off, r)
	case TypeArray, TypeMap, TypeSet, TypePush:
		end, err = l.aggregate(b, off, depth, t, r)
	case TypeNull:
		end, err = l.null(b, off, r)
	case TypeBoolean:
		end, err = l.boolean(b, off, r)
	case TypeDouble:
		end, err = l.double(b, off, r)
	case TypeBigNumber:
		end, err = l.bignum(b, off, r)
	default:
		return 0, protoErr(off, "unknown type byte "+quoteByte(t))
	}
	if err != nil {
		return 0, err
	}
	if r != nil {
		r.Raw = b[off:end:end]
	}
	return end, nil
}

// line returns the content of the line starting at b[from:] and the offset
// past its CRLF. max bounds the content length. A line that cannot end
// within max bytes is an error as soon as its byte max+1 (or the CR at max
// not followed by LF) has arrived; the decision depends only on the bytes
// present, so more bytes never change it.
func line(b []byte, from, max int) (content []byte, next int, err error) {
	rest := b[from:]
	window := rest
	if len(window) > max+1 {
		window = window[:max+1]
	}
	i := bytes.IndexByte(window, '\n')
	if i < 0 {
		// The only end still possible is a CR at max and an LF at max+1.
		switch {
		case len(rest) <= max:
			return nil, 0, ErrIncomplete
		case rest[max] != '\r':
			return nil, 0, protoErr(from, "line longer than the limit of "+itoa(int64(max))+" bytes")
		case len(rest) == max+1:
			return nil, 0, ErrIncomplete
		case rest[max+1] != '\n':
			return nil, 0, protoErr(from, "line longer than the limit of "+itoa(int64(max))+" bytes")
		}
		return rest[:max:max], from + max + 2, nil
	}
	if i == 0 || rest[i-1] != '\r' {
		return nil, 0, protoErr(from+i, "line feed not preceded by carriage return")
	}
	return rest[: i-1 : i-1], from + i + 1, nil
}

func (l *limits) simple(b []byte, off int, r *Reply) (int, error) {
	c, next, err := line(b, off+1, l.line)
	if err != nil {
		return 0, err
	}
	if bytes.IndexByte(c, '\r') >= 0 {
		return 0, protoErr(off+1, "carriage return inside a "+TypeName(b[off]))
	}
	if r != nil {
		r.Data = c
	}
	return next, nil
}

func (l *limits) integer(b []byte, off int, r *Reply) (int, error) {
	c, next, err := line(b, off+1, maxHeaderLen)
	if err != nil {
		return 0, err
	}
	v, ok := parseInt(c)
	if !ok {
		return 0, protoErr(off+1, "invalid integer "+quote(c))
	}
	if r != nil {
		r.N = v
		r.Data = c
	}
	return next, nil
}

func (l *limits) bulk(b []byte, off int, r *Reply) (int, error) {
	t := b[off]
	c, next, err := line(b, off+1, maxHeaderLen)
	if err != nil {
		return 0, err
	}
	if len(c) == 1 && c[0] == '?' {
		return 0, protoErr(off+1, "streamed "+TypeName(t)+" is not supported")
	}
	n, ok := parseInt(c)
	if !ok {
		return 0, protoErr(off+1, "invalid "+TypeName(t)+" length "+quote(c))
	}
	if n < 0 {
		if n == -1 && t == TypeBulkString {
			if r != nil {
				r.Null = true
				r.N = -1
			}
			return next, nil
		}
		return 0, protoErr(off+1, "negative "+TypeName(t)+" length "+quote(c))
	}
	if n > l.maxBulk {
		return 0, protoErr(off+1, TypeName(t)+" length "+itoa(n)+" exceeds the limit of "+itoa(l.maxBulk))
	}
	// Compare against what is left rather than computing next+n+2, which
	// could overflow with a Parser whose MaxBulkLen is near MaxInt64.
	if n > int64(len(b)-next-2) {
		return 0, ErrIncomplete
	}
	e := next + int(n)
	if b[e] != '\r' || b[e+1] != '\n' {
		return 0, protoErr(e, TypeName(t)+" payload not followed by CRLF")
	}
	if t == TypeVerbatim && (n < 4 || b[next+3] != ':') {
		return 0, protoErr(next, "verbatim string without a 3-byte format and ':'")
	}
	if r != nil {
		r.Data = b[next:e:e]
		r.N = n
	}
	return e + 2, nil
}

func (l *limits) aggregate(b []byte, off, depth int, t byte, r *Reply) (int, error) {
	if depth >= l.depth {
		return 0, protoErr(off, "aggregates nested deeper than the limit of "+itoa(int64(l.depth)))
	}
	c, next, err := line(b, off+1, maxHeaderLen)
	if err != nil {
		return 0, err
	}
	if len(c) == 1 && c[0] == '?' {
		return 0, protoErr(off+1, "streamed "+TypeName(t)+" is not supported")
	}
	n, ok := parseInt(c)
	if !ok {
		return 0, protoErr(off+1, "invalid "+TypeName(t)+" length "+quote(c))
	}
	if n < 0 {
		if n == -1 && t == TypeArray {
			if r != nil {
				r.Null = true
				r.N = -1
			}
			return next, nil
		}
		return 0, protoErr(off+1, "negative "+TypeName(t)+" length "+quote(c))
	}
	if n > l.agg {
		return 0, protoErr(off+1, TypeName(t)+" length "+itoa(n)+" exceeds the limit of "+itoa(l.agg))
	}
	elems := n
	if t == TypeMap || t == TypeAttribute {
		elems = 2 * n
	}
	if r != nil {
		r.N = n
	}
	pos := next
	for i := int64(0); i < elems; i++ {
		// Every element takes at least 3 bytes: fail fast on a huge count
		// whose elements cannot all be present yet.
		if pos >= len(b) {
			return 0, ErrIncomplete
		}
		pos, err = l.parse(b, pos, depth+1, nil)
		if err != nil {
			return 0, err
		}
	}
	return pos, nil
}

func (l *limits) null(b []byte, off int, r *Reply) (int, error) {
	c, next, err := line(b, off+1, maxHeaderLen)
	if err != nil {
		return 0, err
	}
	if len(c) != 0 {
		return 0, protoErr(off+1, "null with content "+quote(c))
	}
	if r != nil {
		r.Null = true
	}
	return next, nil
}

func (l *limits) boolean(b []byte, off int, r *Reply) (int, error) {
	c, next, err := line(b, off+1, maxHeaderLen)
	if err != nil {
		return 0, err
	}
	if len(c) != 1 || (c[0] != 't' && c[0] != 'f') {
		return 0, protoErr(off+1, "invalid boolean "+quote(c))
	}
	if r != nil {
		r.Data = c
		if c[0] == 't' {
			r.N = 1
		}
	}
	return next, nil
}

func (l *limits) double(b []byte, off int, r *Reply) (int, error) {
	c, next, err := line(b, off+1, l.line)
	if err != nil {
		return 0, err
	}
	if !validDouble(c) {
		return 0, protoErr(off+1, "invalid double "+quote(c))
	}
	if r != nil {
		r.Data = c
	}
	return next, nil
}

func (l *limits) bignum(b []byte, off int, r *Reply) (int, error) {
	c, next, err := line(b, off+1, l.line)
	if err != nil {
		return 0, err
	}
	d := c
	if len(d) > 0 && (d[0] == '-' || d[0] == '+') {
		d = d[1:]
	}
	if len(d) == 0 || !allDigits(d) {
		return 0, protoErr(off+1, "invalid big number "+quote(c))
	}
	if r != nil {
		r.Data = c
	}
	return next, nil
}

// parseInt parses an optionally signed decimal int64, rejecting empty input,
// non-digits and overflow.
func parseInt(c []byte) (int64, bool) {
	if len(c) == 0 {
		return 0, false
	}
	neg := false
	switch c[0] {
	case '-':
		neg = true
		c = c[1:]
	case '+':
		c = c[1:]
	}
	if len(c) == 0 || len(c) > 19 {
		return 0, false
	}
	var v uint64
	for _, ch := range c {
		if ch < '0' || ch > '9' {
			return 0, false
		}
		v = v*10 + uint64(ch-'0')
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return -int64(v), true
	}
	if v > 1<<63-1 {
		return 0, false
	}
	return int64(v), true
}

func allDigits(c []byte) bool {
	for _, ch := range c {
		if ch < '0' || ch > '9' {
			return false
		}
	}
	return true
}

// validDouble accepts [sign] digits [. digits] [e|E [sign] digits], also
// ".5"-style and "5."-style forms, and inf, -inf, +inf, nan, -nan.
func validDouble(c []byte) bool {
	s := c
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		s = s[1:]
	}
	switch string(s) {
	case "inf", "nan":
		return true
	}
	i, digits := 0, 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			digits++
		}
	}
	if digits == 0 {
		return false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '-' || s[i] == '+') {
			i++
		}
		exp := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			exp++
		}
		if exp == 0 {
			return false
		}
	}
	return i == len(s)
}
