package resp

import (
	"errors"
	"strconv"
)

// Type bytes: the first byte of every RESP frame.
const (
	// RESP2
	TypeSimpleString byte = '+'
	TypeError        byte = '-'
	TypeInteger      byte = ':'
	TypeBulkString   byte = '$'
	TypeArray        byte = '*'
	// RESP3
	TypeNull      byte = '_'
	TypeBoolean   byte = '#'
	TypeDouble    byte = ','
	TypeBigNumber byte = '('
	TypeBulkError byte = '!'
	TypeVerbatim  byte = '='
	TypeMap       byte = '%'
	TypeSet       byte = '~'
	TypeAttribute byte = '|'
	TypePush      byte = '>'
)

// TypeName returns a readable name for a type byte ("bulk string", ...), or
// "unknown" for a byte that is not a RESP type.
func TypeName(t byte) string {
	switch t {
	case TypeSimpleString:
		return "simple string"
	case TypeError:
		return "error"
	case TypeInteger:
		return "integer"
	case TypeBulkString:
		return "bulk string"
	case TypeArray:
		return "array"
	case TypeNull:
		return "null"
	case TypeBoolean:
		return "boolean"
	case TypeDouble:
		return "double"
	case TypeBigNumber:
		return "big number"
	case TypeBulkError:
		return "bulk error"
	case TypeVerbatim:
		return "verbatim string"
	case TypeMap:
		return "map"
	case TypeSet:
		return "set"
	case TypeAttribute:
		return "attribute"
	case TypePush:
		return "push"
	}
	return "unknown"
}

// ErrIncomplete is returned by the parser when the buffer holds the start of
// a frame but not all of it: read more bytes and parse again from the same
// offset. It is never returned for invalid input.
var ErrIncomplete = errors.New("resp: incomplete frame, need more bytes")

// ErrProtocol matches (with errors.Is) every *ProtocolError.
var ErrProtocol = errors.New("resp: protocol error")

// ProtocolError says what was wrong with the input and at which byte offset
// (from the start of the buffer given to Parse) it was found. After a
// protocol error the stream cannot be resynchronised: close the connection.
type ProtocolError struct {
	Offset int    // byte offset in the parsed buffer
	Msg    string // what was wrong
}

func (e *ProtocolError) Error() string {
	return "resp: protocol error at byte " + strconv.Itoa(e.Offset) + ": " + e.Msg
}

// Is makes errors.Is(err, ErrProtocol) true for every *ProtocolError.
func (e *ProtocolError) Is(target error) bool { return target == ErrProtocol }

func protoErr(off int, msg string) error { return &ProtocolError{Offset: off, Msg: msg} }

// Default limits of a zero Parser.
const (
	// DefaultMaxBulkLen is the largest bulk string (and verbatim string, bulk
	// error) payload accepted: 512 MiB, as Redis's proto-max-bulk-len.
	DefaultMaxBulkLen = 512 << 20
	// DefaultMaxAggregateLen is the largest element count of an array, set,
	// push, map or attribute (maps and attributes count pairs).
	DefaultMaxAggregateLen = 1 << 24
	// DefaultMaxDepth is the deepest nesting of aggregates accepted.
	DefaultMaxDepth = 64
	// DefaultMaxLineLen is the longest simple string, error, double, big
	// number or integer line accepted, without its CRLF.
	DefaultMaxLineLen = 1 << 20
)
