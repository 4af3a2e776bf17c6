package mux

import "github.com/redmux/redmux/resp"

// Expect is the set of reply kinds a command may get, checked before the
// reply is delivered. A RESP stream cannot always tell a stray reply from
// the awaited one, but a command knows what it expects (SET NX: +OK or
// nil; the lock scripts: an integer): a reply of another kind means the
// connection's replies are no longer in step with its commands, so the
// connection is broken (ErrProtocol, every batch waiting on it fails)
// instead of handing the reply, and every later one, to the wrong command.
// Error replies are always accepted. The zero Expect accepts anything.
type Expect uint16

// Reply kinds for Expect; combine them with |.
const (
	ExpectAny       Expect = 0
	ExpectSimple    Expect = 1 << iota // simple string (+OK)
	ExpectBulk                         // bulk string or verbatim, not null
	ExpectInt                          // integer
	ExpectNil                          // a null: $-1, *-1 or RESP3 _
	ExpectAggregate                    // array, set or map, not null
	ExpectBool                         // RESP3 boolean
	ExpectDouble                       // RESP3 double or big number
)

// kindOf returns the Expect bit of a reply, 0 for an error reply.
func kindOf(t byte, null bool) Expect {
	if null {
		return ExpectNil
	}
	switch t {
	case resp.TypeSimpleString:
		return ExpectSimple
	case resp.TypeBulkString, resp.TypeVerbatim:
		return ExpectBulk
	case resp.TypeInteger:
		return ExpectInt
	case resp.TypeArray, resp.TypeSet, resp.TypeMap:
		return ExpectAggregate
	case resp.TypeBoolean:
		return ExpectBool
	case resp.TypeDouble, resp.TypeBigNumber:
		return ExpectDouble
	}
	return 0 // errors
}

// accepts reports whether a reply of kind k (0: an error reply) may be
// delivered to a command expecting e.
func (e Expect) accepts(k Expect) bool { return e == 0 || k == 0 || e&k != 0 }
