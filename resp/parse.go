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
	// noFast turns the fast path off at every depth, so that only the
	// general path parses: parseGeneral, the fuzz target's reference.
	noFast bool
}

func (p *Parser) limits() limits {
	l := limits{maxBulk: DefaultMaxBulkLen, agg: DefaultMaxAggregateLen, depth: DefaultMaxDepth, line: DefaultMaxLineLen}
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
	if len(b) == 0 {
		return Reply{}, 0, ErrIncomplete
	}
	if t, data, n, end, ok := l.fast(b); ok {
		return Reply{Type: t, Null: isNull(t, n), Data: data, N: n, Raw: b[:end:end]}, end, nil
	}
	return l.parse(b)
}

// parseGeneral is Parse without the fast path at any depth: the reference
// the fuzz target compares Parse (and Iter, and the aggregate validator's
// use of the fast path) against. Nothing else calls it.
func (p *Parser) parseGeneral(b []byte) (Reply, int, error) {
	l := p.limits()
	l.noFast = true
	if len(b) == 0 {
		return Reply{}, 0, ErrIncomplete
	}
	return l.parse(b)
}

// parse is Parse's general path: leading attributes, then one frame.
func (l *limits) parse(b []byte) (Reply, int, error) {
	off := 0
	if b[0] == TypeAttribute {
		var err error
		if off, err = l.attrs(b, 0, 0); err != nil {
			return Reply{}, 0, err
		}
	}
	t, data, n, end, err := l.one(b, off, 0)
	if err != nil {
		return Reply{}, 0, err
	}
	// One composite literal straight into the result: building the Reply
	// through a pointer and copying it out costs more than the parse of a
	// short frame.
	var attr []byte
	if off > 0 {
		attr = b[:off:off]
	}
	return Reply{Type: t, Null: isNull(t, n), Data: data, N: n, Raw: b[off:end:end], Attr: attr}, end, nil
}

// fast parses the short frames of the lock path (+OK, -ERR..., :1, $-1,
// small bulks) in one pass. It answers only when the frame is complete and
// well formed, exactly as the general path would; anything else (longer,
// incomplete or invalid input) returns ok == false for the general path.
// Only the null bulk has n == -1. The results travel in registers: a Reply
// returned through memory and copied again costs more than this parse.
func (l *limits) fast(b []byte) (t byte, data []byte, n int64, end int, ok bool) {
	if len(b) < 4 || l.noFast {
		return 0, nil, 0, 0, false
	}
	switch t = b[0]; t {
	case TypeSimpleString, TypeError:
		end := len(b) - 1
		if end > 33 {
			end = 33
		}
		for i := 1; i < end; i++ {
			if c := b[i]; c == '\r' || c == '\n' {
				if c == '\r' && b[i+1] == '\n' && i-1 <= l.line {
					return t, b[1:i:i], 0, i + 2, true
				}
				return 0, nil, 0, 0, false
			}
		}
	case TypeInteger:
		i, neg := 1, false
		if b[1] == '-' {
			i, neg = 2, true
		}
		start := i
		var v int64
		// At most 18 digits: no overflow possible.
		for ; i < len(b) && i-start < 18 && b[i] >= '0' && b[i] <= '9'; i++ {
			v = v*10 + int64(b[i]-'0')
		}
		if i == start || i+1 >= len(b) || b[i] != '\r' || b[i+1] != '\n' {
			return 0, nil, 0, 0, false
		}
		if neg {
			v = -v
		}
		return t, b[1:i:i], v, i + 2, true
	case TypeBulkString:
		if b[1] == '-' {
			if b[2] == '1' && b[3] == '\r' && len(b) > 4 && b[4] == '\n' {
				return t, nil, -1, 5, true
			}
			return 0, nil, 0, 0, false
		}
		i := 1
		// At most 9 digits: no overflow, and the header is short.
		for ; i < len(b) && i < 10 && b[i] >= '0' && b[i] <= '9'; i++ {
			n = n*10 + int64(b[i]-'0')
		}
		if i == 1 || i+1 >= len(b) || b[i] != '\r' || b[i+1] != '\n' || n > l.maxBulk {
			return 0, nil, 0, 0, false
		}
		next := i + 2
		if n > int64(len(b)-next-2) {
			return 0, nil, 0, 0, false
		}
		e := next + int(n)
		if b[e] != '\r' || b[e+1] != '\n' {
			return 0, nil, 0, 0, false
		}
		return t, b[next:e:e], n, e + 2, true
	}
	return 0, nil, 0, 0, false
}

// isNull tells the null replies from their type and N: $-1, *-1 and _.
func isNull(t byte, n int64) bool {
	return t == TypeNull || (n == -1 && (t == TypeBulkString || t == TypeArray))
}

// Skip returns the size of the first complete frame in b without building a
// Reply; errors as for Parse.
func (p *Parser) Skip(b []byte) (int, error) {
	l := p.limits()
	n, err := l.skip(b, 0, 0)
	if err != nil {
		return 0, err
	}
	return n, nil
}

// maxHeaderLen bounds the length line of bulk and aggregate headers: a sign
// and 19 digits fit in 20 bytes.
const maxHeaderLen = 21

// skip parses one frame at b[off:], leading attributes included, and
// returns the offset just past it.
func (l *limits) skip(b []byte, off, depth int) (int, error) {
	if off >= len(b) {
		return 0, ErrIncomplete
	}
	if b[off] == TypeAttribute {
		var err error
		if off, err = l.attrs(b, off, depth); err != nil {
			return 0, err
		}
	}
	_, _, _, end, err := l.one(b, off, depth)
	return end, err
}

// attrs skips the attributes starting at b[off:] and returns the offset of
// the frame they annotate.
func (l *limits) attrs(b []byte, off, depth int) (int, error) {
	for {
		if off >= len(b) {
			return 0, ErrIncomplete
		}
		if b[off] != TypeAttribute {
			return off, nil
		}
		_, end, err := l.aggregate(b, off, depth, TypeAttribute)
		if err != nil {
			return 0, err
		}
		off = end
	}
}

// one parses the frame at b[off:], which is not an attribute, and returns
// its fields (as Reply documents them) and the offset just past it. The
// results travel in registers.
func (l *limits) one(b []byte, off, depth int) (t byte, data []byte, n int64, end int, err error) {
	if off >= len(b) {
		return 0, nil, 0, 0, ErrIncomplete
	}
	t = b[off]
	switch t {
	case TypeSimpleString, TypeError:
		data, end, err = l.simple(b, off)
	case TypeInteger:
		data, n, end, err = integer(b, off)
	case TypeBulkString, TypeBulkError, TypeVerbatim:
		data, n, end, err = l.bulk(b, off)
	case TypeArray, TypeMap, TypeSet, TypePush:
		n, end, err = l.aggregate(b, off, depth, t)
	case TypeNull:
		end, err = null(b, off)
	case TypeBoolean:
		data, n, end, err = boolean(b, off)
	case TypeDouble:
		data, end, err = l.double(b, off)
	case TypeBigNumber:
		data, end, err = l.bignum(b, off)
	default:
		err = protoErr(off, "unknown type byte "+quoteByte(t))
	}
	if err != nil {
		return 0, nil, 0, 0, err
	}
	return t, data, n, end, nil
}

// line returns the content of the line starting at b[from:] and the offset
// past its CRLF. max bounds the content length. A line that cannot end
// within max bytes is an error as soon as its byte max+1 (or the CR at max
// not followed by LF) has arrived; the decision depends only on the bytes
// present, so more bytes never change it.
func line(b []byte, from, max int) (content []byte, next int, err error) {
	// Fast path for the short lines of the hot path: the first CR or LF
	// within 32 bytes is a CRLF. Anything else (long, incomplete or
	// malformed lines) takes the slow path, which has the full rules.
	end := from + 32
	if end > len(b)-1 {
		end = len(b) - 1
	}
	for i := from; i < end; i++ {
		if c := b[i]; c == '\r' || c == '\n' {
			if c == '\r' && b[i+1] == '\n' && i-from <= max {
				return b[from:i:i], i + 2, nil
			}
			break
		}
	}
	return lineSlow(b, from, max)
}

// lineSlow is line for anything but a short, well-formed line.
func lineSlow(b []byte, from, max int) (content []byte, next int, err error) {
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

func (l *limits) simple(b []byte, off int) ([]byte, int, error) {
	c, next, err := line(b, off+1, l.line)
	if err != nil {
		return nil, 0, err
	}
	if bytes.IndexByte(c, '\r') >= 0 {
		return nil, 0, protoErr(off+1, "carriage return inside a "+TypeName(b[off]))
	}
	return c, next, nil
}

func integer(b []byte, off int) ([]byte, int64, int, error) {
	c, next, err := line(b, off+1, maxHeaderLen)
	if err != nil {
		return nil, 0, 0, err
	}
	v, ok := parseInt(c)
	if !ok {
		return nil, 0, 0, protoErr(off+1, "invalid integer "+quote(c))
	}
	return c, v, next, nil
}

func (l *limits) bulk(b []byte, off int) ([]byte, int64, int, error) {
	t := b[off]
	c, next, err := line(b, off+1, maxHeaderLen)
	if err != nil {
		return nil, 0, 0, err
	}
	if len(c) == 1 && c[0] == '?' {
		return nil, 0, 0, protoErr(off+1, "streamed "+TypeName(t)+" is not supported")
	}
	n, ok := parseInt(c)
	if !ok {
		return nil, 0, 0, protoErr(off+1, "invalid "+TypeName(t)+" length "+quote(c))
	}
	if n < 0 {
		if n == -1 && t == TypeBulkString {
			return nil, -1, next, nil
		}
		return nil, 0, 0, protoErr(off+1, "negative "+TypeName(t)+" length "+quote(c))
	}
	if n > l.maxBulk {
		return nil, 0, 0, protoErr(off+1, TypeName(t)+" length "+itoa(n)+" exceeds the limit of "+itoa(l.maxBulk))
	}
	// Compare against what is left rather than computing next+n+2, which
	// could overflow with a Parser whose MaxBulkLen is near MaxInt64.
	if n > int64(len(b)-next-2) {
		return nil, 0, 0, ErrIncomplete
	}
	e := next + int(n)
	if b[e] != '\r' || b[e+1] != '\n' {
		return nil, 0, 0, protoErr(e, TypeName(t)+" payload not followed by CRLF")
	}
	if t == TypeVerbatim && (n < 4 || b[next+3] != ':') {
		return nil, 0, 0, protoErr(next, "verbatim string without a 3-byte format and ':'")
	}
	return b[next:e:e], n, e + 2, nil
}

// aggregate validates an aggregate and its children and returns its
// declared count (pairs for maps and attributes; -1 for the null array).
func (l *limits) aggregate(b []byte, off, depth int, t byte) (int64, int, error) {
	if depth >= l.depth {
		return 0, 0, protoErr(off, "aggregates nested deeper than the limit of "+itoa(int64(l.depth)))
	}
	c, next, err := line(b, off+1, maxHeaderLen)
	if err != nil {
		return 0, 0, err
	}
	if len(c) == 1 && c[0] == '?' {
		return 0, 0, protoErr(off+1, "streamed "+TypeName(t)+" is not supported")
	}
	n, ok := parseInt(c)
	if !ok {
		return 0, 0, protoErr(off+1, "invalid "+TypeName(t)+" length "+quote(c))
	}
	if n < 0 {
		if n == -1 && t == TypeArray {
			return -1, next, nil
		}
		return 0, 0, protoErr(off+1, "negative "+TypeName(t)+" length "+quote(c))
	}
	if n > l.agg {
		return 0, 0, protoErr(off+1, TypeName(t)+" length "+itoa(n)+" exceeds the limit of "+itoa(l.agg))
	}
	elems := n
	if t == TypeMap || t == TypeAttribute {
		elems = 2 * n
	}
	pos := next
	for i := int64(0); i < elems; i++ {
		// Fail fast, without recursing, when the next element has not
		// started to arrive.
		if pos >= len(b) {
			return 0, 0, ErrIncomplete
		}
		if _, _, _, end, ok := l.fast(b[pos:]); ok {
			pos += end
			continue
		}
		pos, err = l.skip(b, pos, depth+1)
		if err != nil {
			return 0, 0, err
		}
	}
	return n, pos, nil
}

func null(b []byte, off int) (int, error) {
	c, next, err := line(b, off+1, maxHeaderLen)
	if err != nil {
		return 0, err
	}
	if len(c) != 0 {
		return 0, protoErr(off+1, "null with content "+quote(c))
	}
	return next, nil
}

func boolean(b []byte, off int) ([]byte, int64, int, error) {
	c, next, err := line(b, off+1, maxHeaderLen)
	if err != nil {
		return nil, 0, 0, err
	}
	if len(c) != 1 || (c[0] != 't' && c[0] != 'f') {
		return nil, 0, 0, protoErr(off+1, "invalid boolean "+quote(c))
	}
	if c[0] == 't' {
		return c, 1, next, nil
	}
	return c, 0, next, nil
}

func (l *limits) double(b []byte, off int) ([]byte, int, error) {
	c, next, err := line(b, off+1, l.line)
	if err != nil {
		return nil, 0, err
	}
	if !validDouble(c) {
		return nil, 0, protoErr(off+1, "invalid double "+quote(c))
	}
	return c, next, nil
}

func (l *limits) bignum(b []byte, off int) ([]byte, int, error) {
	c, next, err := line(b, off+1, l.line)
	if err != nil {
		return nil, 0, err
	}
	d := c
	if len(d) > 0 && (d[0] == '-' || d[0] == '+') {
		d = d[1:]
	}
	if len(d) == 0 || !allDigits(d) {
		return nil, 0, protoErr(off+1, "invalid big number "+quote(c))
	}
	return c, next, nil
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
