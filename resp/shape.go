package resp

// Shape is what Parse learned about a frame, without its bytes: a reply
// kept as a Shape and the frame's offset in a buffer of its own can be
// read again with At, without parsing the frame a second time. It holds no
// pointers, so an array of them costs the garbage collector nothing.
//
// mux keeps one per reply it copies out of a connection's read buffer: the
// frame is parsed once, on arrival, and the success predicate and every
// later Reply read it through At.
type Shape struct {
	n       int64
	dataLen uint32 // len(Data); the payload ends 2 bytes (CRLF) before Raw does
	attrLen uint32 // len(Attr): the leading attributes, at the frame's start
	typ     byte
	null    bool
	data    bool // Data is not nil (an empty bulk has an empty, non-nil Data)
}

// Shape returns r's shape. r must be a reply Parse returned, whole (its
// Attr and Raw as Parse made them).
func (r Reply) Shape() Shape {
	return Shape{
		n:       r.N,
		dataLen: uint32(len(r.Data)),
		attrLen: uint32(len(r.Attr)),
		typ:     r.Type,
		null:    r.Null,
		data:    r.Data != nil,
	}
}

// Type is the frame's type byte (Reply.Type).
func (s Shape) Type() byte { return s.typ }

// At returns the reply of shape s over frame: the bytes Parse consumed for
// it (leading attributes included), or a copy of them. It is the Reply
// Parse would return for frame, and parses nothing. A frame that is not
// that long gives the zero Reply.
func (s Shape) At(frame []byte) Reply {
	a := int(s.attrLen)
	if len(frame) < a || (s.data && len(frame)-a < int(s.dataLen)+2) {
		return Reply{}
	}
	r := Reply{Type: s.typ, Null: s.null, N: s.n, Raw: frame[a:len(frame):len(frame)]}
	if a > 0 {
		r.Attr = frame[:a:a]
	}
	if s.data {
		// Every payload Parse reports is a line's content or a bulk's body,
		// and both end with the frame's closing CRLF.
		end := len(frame) - 2
		r.Data = frame[end-int(s.dataLen) : end : end]
	}
	return r
}
