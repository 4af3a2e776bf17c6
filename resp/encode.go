package resp

import (
	"math"
	"strconv"
	"strings"
)

// The Append* functions encode RESP frames at the end of dst and return the
// extended slice, like strconv.AppendInt. They never allocate when dst has
// room for the frame.

// AppendArrayHeader appends "*n\r\n"; n == -1 encodes the RESP2 null array.
func AppendArrayHeader(dst []byte, n int) []byte { return appendHeader(dst, TypeArray, int64(n)) }

// AppendMapHeader appends "%n\r\n" (n entries follow, key then value).
func AppendMapHeader(dst []byte, n int) []byte { return appendHeader(dst, TypeMap, int64(n)) }

// AppendSetHeader appends "~n\r\n".
func AppendSetHeader(dst []byte, n int) []byte { return appendHeader(dst, TypeSet, int64(n)) }

// AppendPushHeader appends ">n\r\n".
func AppendPushHeader(dst []byte, n int) []byte { return appendHeader(dst, TypePush, int64(n)) }

// AppendAttributeHeader appends "|n\r\n" (n entries follow, then the reply
// the attribute annotates).
func AppendAttributeHeader(dst []byte, n int) []byte {
	return appendHeader(dst, TypeAttribute, int64(n))
}

func appendHeader(dst []byte, t byte, n int64) []byte {
	dst = append(dst, t)
	dst = strconv.AppendInt(dst, n, 10)
	return append(dst, '\r', '\n')
}

// AppendBulk appends b as a bulk string.
func AppendBulk(dst, b []byte) []byte {
	dst = appendHeader(dst, TypeBulkString, int64(len(b)))
	dst = append(dst, b...)
	return append(dst, '\r', '\n')
}

// AppendBulkString appends s as a bulk string.
func AppendBulkString(dst []byte, s string) []byte {
	dst = appendHeader(dst, TypeBulkString, int64(len(s)))
	dst = append(dst, s...)
	return append(dst, '\r', '\n')
}

// AppendBulkInt appends the decimal form of v as a bulk string, as command
// arguments carry numbers.
func AppendBulkInt(dst []byte, v int64) []byte {
	var scratch [20]byte
	d := strconv.AppendInt(scratch[:0], v, 10)
	return AppendBulk(dst, d)
}

// AppendNullBulk appends the RESP2 null bulk string "$-1\r\n".
func AppendNullBulk(dst []byte) []byte { return append(dst, "$-1\r\n"...) }

// AppendNullArray appends the RESP2 null array "*-1\r\n".
func AppendNullArray(dst []byte) []byte { return append(dst, "*-1\r\n"...) }

// AppendNull appends the RESP3 null "_\r\n".
func AppendNull(dst []byte) []byte { return append(dst, "_\r\n"...) }

// AppendInt appends an integer reply ":v\r\n".
func AppendInt(dst []byte, v int64) []byte { return appendHeader(dst, TypeInteger, v) }

// AppendSimpleString appends "+s\r\n". A simple string is one line, so each
// CR or LF in s is written as a space (as Redis does for error replies):
// the frame stays valid whatever s holds. Use AppendBulkString for text that
// may hold line breaks.
func AppendSimpleString(dst []byte, s string) []byte {
	return appendLine(dst, TypeSimpleString, s)
}

// AppendError appends "-s\r\n"; by convention s starts with an upper-case
// code such as ERR. As for AppendSimpleString, each CR or LF in s is written
// as a space; AppendBulkError carries text with line breaks.
func AppendError(dst []byte, s string) []byte {
	return appendLine(dst, TypeError, s)
}

// appendLine appends a one-line frame of type t, with each CR or LF in s
// replaced by a space.
func appendLine(dst []byte, t byte, s string) []byte {
	dst = append(dst, t)
	for {
		i := strings.IndexAny(s, "\r\n")
		if i < 0 {
			break
		}
		dst = append(dst, s[:i]...)
		dst = append(dst, ' ')
		s = s[i+1:]
	}
	dst = append(dst, s...)
	return append(dst, '\r', '\n')
}

// AppendBulkError appends a RESP3 bulk error "!len\r\ns\r\n".
func AppendBulkError(dst []byte, s string) []byte {
	dst = appendHeader(dst, TypeBulkError, int64(len(s)))
	dst = append(dst, s...)
	return append(dst, '\r', '\n')
}

// AppendBool appends a RESP3 boolean "#t\r\n" or "#f\r\n".
func AppendBool(dst []byte, v bool) []byte {
	if v {
		return append(dst, "#t\r\n"...)
	}
	return append(dst, "#f\r\n"...)
}

// AppendDouble appends a RESP3 double, with inf, -inf and nan spelled as
// Redis spells them.
func AppendDouble(dst []byte, f float64) []byte {
	dst = append(dst, TypeDouble)
	switch {
	case math.IsInf(f, 1):
		dst = append(dst, "inf"...)
	case math.IsInf(f, -1):
		dst = append(dst, "-inf"...)
	case math.IsNaN(f):
		dst = append(dst, "nan"...)
	default:
		dst = strconv.AppendFloat(dst, f, 'g', -1, 64)
	}
	return append(dst, '\r', '\n')
}

// AppendBigNumber appends a RESP3 big number; digits is an optionally signed
// decimal string.
func AppendBigNumber(dst []byte, digits string) []byte {
	dst = append(dst, TypeBigNumber)
	dst = append(dst, digits...)
	return append(dst, '\r', '\n')
}

// AppendVerbatim appends a RESP3 verbatim string with a 3-byte format such as
// "txt" or "mkd".
func AppendVerbatim(dst []byte, format string, text []byte) []byte {
	dst = appendHeader(dst, TypeVerbatim, int64(len(text)+4))
	dst = append(dst, format...)
	dst = append(dst, ':')
	dst = append(dst, text...)
	return append(dst, '\r', '\n')
}

// AppendCommand appends a command as an array of bulk strings.
func AppendCommand(dst []byte, args ...string) []byte {
	dst = AppendArrayHeader(dst, len(args))
	for _, a := range args {
		dst = AppendBulkString(dst, a)
	}
	return dst
}

// AppendCommandBytes appends a command as an array of bulk strings.
func AppendCommandBytes(dst []byte, args ...[]byte) []byte {
	dst = AppendArrayHeader(dst, len(args))
	for _, a := range args {
		dst = AppendBulk(dst, a)
	}
	return dst
}
