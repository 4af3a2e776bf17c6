package resp

import (
	"bytes"
	"math"
	"strconv"
	"unsafe"
)

// Reply is one parsed frame: a view into the parser's input buffer. Its
// slices are valid only as long as those bytes are not overwritten (for a
// connection's read buffer: until the next read into it). Copy Raw to keep a
// reply longer.
type Reply struct {
	// Type is the frame's type byte (TypeBulkString, TypeArray, ...).
	Type byte
	// Null is true for a RESP2 null bulk ($-1) or null array (*-1) and for
	// the RESP3 null (_).
	Null bool
	// Data is the payload of a scalar: simple string and error text, bulk
	// string, bulk error and verbatim payload (with its "txt:" prefix), the
	// digits of an integer, big number or double, and "t"/"f" for a boolean.
	// It is nil for aggregates and nulls.
	Data []byte
	// N is the value of an integer, 1 or 0 for a boolean, the payload length
	// of a bulk, and the declared count of an aggregate (pairs for maps and
	// attributes); -1 for a RESP2 null.
	N int64
	// Raw is the whole frame as it was on the wire, leading attributes
	// excluded.
	Raw []byte
	// Attr holds the raw bytes of RESP3 attributes that preceded the frame,
	// if any (nil otherwise). Read them with Attribute.
	Attr []byte
}

var okBytes = []byte("OK")

// IsOK reports whether r is the simple string OK.
func (r Reply) IsOK() bool {
	return r.Type == TypeSimpleString && bytes.Equal(r.Data, okBytes)
}

// IsNil reports whether r is a null of any kind ($-1, *-1 or _).
func (r Reply) IsNil() bool { return r.Null }

// IsError reports whether r is an error reply (simple or bulk error).
func (r Reply) IsError() bool { return r.Type == TypeError || r.Type == TypeBulkError }

// IsAggregate reports whether r is an array, map, set, push or attribute.
func (r Reply) IsAggregate() bool {
	switch r.Type {
	case TypeArray, TypeMap, TypeSet, TypePush, TypeAttribute:
		return true
	}
	return false
}

// Int returns the value of an integer reply. ok is false for other types.
func (r Reply) Int() (v int64, ok bool) {
	if r.Type != TypeInteger {
		return 0, false
	}
	return r.N, true
}

// Bool returns the value of a RESP3 boolean reply. ok is false for other
// types.
func (r Reply) Bool() (v, ok bool) {
	if r.Type != TypeBoolean {
		return false, false
	}
	return r.N == 1, true
}

// Float returns the value of a double reply (inf, -inf and nan included), or
// of an integer reply. ok is false for other types.
func (r Reply) Float() (float64, bool) {
	switch r.Type {
	case TypeInteger:
		return float64(r.N), true
	case TypeDouble:
		s := r.Data
		switch string(s) {
		case "inf", "+inf":
			return math.Inf(1), true
		case "-inf":
			return math.Inf(-1), true
		case "nan", "-nan", "+nan":
			return math.NaN(), true
		}
		f, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(s), len(s)), 64)
		if err != nil {
			// Out of range: ParseFloat returns ±Inf with the error.
			return f, !math.IsNaN(f)
		}
		return f, true
	}
	return 0, false
}

// ErrorText returns the text of an error reply (simple or bulk), or nil.
func (r Reply) ErrorText() []byte {
	if !r.IsError() {
		return nil
	}
	return r.Data
}

// ErrorPrefix returns the first word of an error reply's text, such as ERR,
// NOSCRIPT, WRONGTYPE, LOADING, READONLY, NOAUTH, WRONGPASS, or nil when r
// is not an error.
func (r Reply) ErrorPrefix() []byte {
	t := r.ErrorText()
	if t == nil {
		return nil
	}
	if i := bytes.IndexByte(t, ' '); i >= 0 {
		return t[:i]
	}
	return t
}

// HasErrorPrefix reports whether r is an error reply whose first word is
// prefix (for example "NOSCRIPT").
func (r Reply) HasErrorPrefix(prefix string) bool {
	p := r.ErrorPrefix()
	return p != nil && string(p) == prefix
}

// Equal reports whether r is a string-like reply (simple, bulk, verbatim
// payload without prefix excluded) whose payload equals b.
func (r Reply) Equal(b []byte) bool {
	switch r.Type {
	case TypeSimpleString, TypeBulkString:
		return !r.Null && bytes.Equal(r.Data, b)
	}
	return false
}

// VerbatimFormat returns the 3-byte format ("txt", "mkd") of a verbatim
// string, or nil for other types.
func (r Reply) VerbatimFormat() []byte {
	if r.Type != TypeVerbatim {
		return nil
	}
	return r.Data[:3]
}

// VerbatimText returns the text of a verbatim string without its format
// prefix, or nil for other types.
func (r Reply) VerbatimText() []byte {
	if r.Type != TypeVerbatim {
		return nil
	}
	return r.Data[4:]
}

// Len returns the number of child frames an aggregate holds (2 per entry for
// maps and attributes), 0 for anything else.
func (r Reply) Len() int {
	if !r.IsAggregate() || r.Null {
		return 0
	}
	if r.Type == TypeMap || r.Type == TypeAttribute {
		return int(2 * r.N)
	}
	return int(r.N)
}

// Attribute returns the first RESP3 attribute that preceded r, as a Reply
// of TypeAttribute whose Iter walks its keys and values (Value gives them as
// []KV), and false if r had none. (Parse folds an attribute into the frame
// it annotates, so parsing Attr on its own reports ErrIncomplete.)
func (r Reply) Attribute() (Reply, bool) {
	if len(r.Attr) == 0 || r.Attr[0] != TypeAttribute {
		return Reply{}, false
	}
	l := limits{maxBulk: math.MaxInt64, agg: math.MaxInt64, depth: math.MaxInt32, line: math.MaxInt32}
	n, end, err := l.aggregate(r.Attr, 0, 0, TypeAttribute)
	if err != nil {
		return Reply{}, false
	}
	return Reply{Type: TypeAttribute, N: n, Raw: r.Attr[:end:end]}, true
}

// Iter returns an iterator over an aggregate's child frames (keys and values
// alternate for maps). It does not allocate.
func (r Reply) Iter() Iter {
	if r.Len() == 0 {
		return Iter{}
	}
	// Skip the header line.
	i := bytes.IndexByte(r.Raw, '\n')
	return Iter{b: r.Raw[i+1:], left: r.Len()}
}

// Elem returns the i-th child frame of an aggregate, walking from the first.
func (r Reply) Elem(i int) (Reply, bool) {
	if i < 0 || i >= r.Len() {
		return Reply{}, false
	}
	it := r.Iter()
	var c Reply
	for j := 0; j <= i; j++ {
		if !it.Next(&c) {
			return Reply{}, false
		}
	}
	return c, true
}

// Iter walks the children of an aggregate Reply. The zero Iter is empty.
type Iter struct {
	b    []byte
	off  int
	left int
}

// Next stores the next child frame in c and reports whether there was one.
func (it *Iter) Next(c *Reply) bool {
	if it.left <= 0 {
		return false
	}
	// The frame was validated when its parent was parsed, with limits at
	// least as wide as these, so this cannot fail; guard anyway.
	l := limits{maxBulk: math.MaxInt64, agg: math.MaxInt64, depth: math.MaxInt32, line: math.MaxInt32}
	if it.off < len(it.b) {
		rest := it.b[it.off:]
		if t, data, n, end, ok := l.fast(rest); ok {
			c.set(t, data, n, rest[:end:end], nil)
			it.off += end
			it.left--
			return true
		}
	}
	off, err := l.attrs(it.b, it.off, 0)
	if err != nil {
		it.left = 0
		return false
	}
	t, data, n, end, err := l.one(it.b, off, 0)
	if err != nil {
		it.left = 0
		return false
	}
	var attr []byte
	if off > it.off {
		attr = it.b[it.off:off:off]
	}
	c.set(t, data, n, it.b[off:end:end], attr)
	it.off = end
	it.left--
	return true
}

// set stores a frame's fields one by one: a composite literal assigned
// through the pointer is built in a temporary and block-copied, which
// stalls on the just-written temporary and costs more than the parse.
func (c *Reply) set(t byte, data []byte, n int64, raw, attr []byte) {
	c.Type = t
	c.Null = isNull(t, n)
	c.Data = data
	c.N = n
	c.Raw = raw
	c.Attr = attr
}

// Remaining returns how many child frames are left.
func (it *Iter) Remaining() int { return it.left }

// String returns a short readable form of r, for debugging and error
// messages (it allocates).
func (r Reply) String() string {
	switch {
	case r.Null:
		return "(nil)"
	case r.Type == TypeError || r.Type == TypeBulkError:
		return "(error) " + string(r.Data)
	case r.Type == TypeInteger:
		return "(integer) " + string(r.Data)
	case r.IsAggregate():
		return "(" + TypeName(r.Type) + " of " + strconv.Itoa(r.Len()) + ")"
	}
	return strconv.Quote(string(r.Data))
}

// Value converts r to plain Go values, for tests, tools and debugging (it
// allocates): string for simple and bulk strings, verbatim text and big
// numbers; Error for errors; int64; bool; float64; nil for nulls;
// []any for arrays, sets and pushes; []KV for maps (in wire order).
func (r Reply) Value() any {
	if r.Null {
		return nil
	}
	switch r.Type {
	case TypeSimpleString, TypeBulkString, TypeBigNumber:
		return string(r.Data)
	case TypeVerbatim:
		return string(r.VerbatimText())
	case TypeError, TypeBulkError:
		return Error(r.Data)
	case TypeInteger:
		return r.N
	case TypeBoolean:
		return r.N == 1
	case TypeDouble:
		f, _ := r.Float()
		return f
	case TypeMap, TypeAttribute:
		out := make([]KV, 0, r.N)
		it := r.Iter()
		var k, v Reply
		for it.Next(&k) && it.Next(&v) {
			out = append(out, KV{Key: k.Value(), Value: v.Value()})
		}
		return out
	case TypeArray, TypeSet, TypePush:
		out := make([]any, 0, r.N)
		it := r.Iter()
		var c Reply
		for it.Next(&c) {
			out = append(out, c.Value())
		}
		return out
	}
	return nil
}

// KV is one map entry in Value's result.
type KV struct {
	Key, Value any
}

// Error is a server error reply's text, as a Go error (for example
// "NOSCRIPT No matching script. Please use EVAL.").
type Error string

func (e Error) Error() string { return string(e) }

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// quote renders at most 32 bytes of c for an error message.
func quote(c []byte) string {
	if len(c) > 32 {
		return strconv.Quote(string(c[:32])) + "..."
	}
	return strconv.Quote(string(c))
}

func quoteByte(b byte) string { return strconv.QuoteRune(rune(b)) }
