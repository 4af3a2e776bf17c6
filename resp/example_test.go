package resp_test

import (
	"errors"
	"fmt"

	"github.com/redmux/redmux/resp"
)

// Parse reads one frame from the front of a buffer; the rest is the next
// frame.
func ExampleParse() {
	buf := []byte("+OK\r\n:1\r\n$-1\r\n")
	for len(buf) > 0 {
		r, n, err := resp.Parse(buf)
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		fmt.Printf("%q ok=%v nil=%v\n", r.Raw, r.IsOK(), r.IsNil())
		buf = buf[n:]
	}
	// Output:
	// "+OK\r\n" ok=true nil=false
	// ":1\r\n" ok=false nil=false
	// "$-1\r\n" ok=false nil=true
}

// A partial frame is ErrIncomplete, never a protocol error: read more bytes
// and parse again from the same start.
func ExampleParse_incomplete() {
	stream := []byte("$5\r\nhello\r\n")
	for _, k := range []int{3, 8, len(stream)} {
		r, n, err := resp.Parse(stream[:k])
		switch {
		case errors.Is(err, resp.ErrIncomplete):
			fmt.Printf("%d bytes: need more\n", k)
		case err != nil:
			fmt.Println("protocol error:", err)
		default:
			fmt.Printf("%d bytes: %q (n=%d)\n", k, r.Data, n)
		}
	}
	// Output:
	// 3 bytes: need more
	// 8 bytes: need more
	// 11 bytes: "hello" (n=11)
}

// A Parser's limits are checked on the header, before the payload arrives.
func ExampleParser() {
	p := resp.Parser{MaxBulkLen: 1 << 20, MaxAggregateLen: 1000, MaxDepth: 8}
	_, _, err := p.Parse([]byte("$1073741824\r\n"))
	fmt.Println(err)
	var pe *resp.ProtocolError
	fmt.Println(errors.Is(err, resp.ErrProtocol), errors.As(err, &pe) && pe.Offset == 1)
	_, _, err = p.Parse([]byte("*-5\r\n"))
	fmt.Println(err)
	// Output:
	// resp: protocol error at byte 1: bulk string length 1073741824 exceeds the limit of 1048576
	// true true
	// resp: protocol error at byte 1: negative array length "-5"
}

// Iter walks an aggregate's children without allocating; map keys and
// values alternate.
func ExampleReply_Iter() {
	r, _, _ := resp.Parse([]byte("%2\r\n+server\r\n+redis\r\n+proto\r\n:3\r\n"))
	it := r.Iter()
	var k, v resp.Reply
	for it.Next(&k) && it.Next(&v) {
		fmt.Printf("%s = %s\n", k.Data, v.Data)
	}
	// Output:
	// server = redis
	// proto = 3
}

func ExampleReply_Value() {
	r, _, _ := resp.Parse([]byte("*4\r\n$3\r\nfoo\r\n:42\r\n_\r\n,inf\r\n"))
	fmt.Printf("%v\n", r.Value())
	// Output: [foo 42 <nil> +Inf]
}

// The lock path's error replies are recognised by their first word.
func ExampleReply_ErrorPrefix() {
	r, _, _ := resp.Parse([]byte("-NOSCRIPT No matching script. Please use EVAL.\r\n"))
	fmt.Printf("%s %v %v\n", r.ErrorPrefix(), r.HasErrorPrefix("NOSCRIPT"), r.HasErrorPrefix("NOAUTH"))
	// Output: NOSCRIPT true false
}

// A command built one argument at a time into a reused buffer, without
// allocating: the shape the lock's own command builders use.
func ExampleAppendArrayHeader() {
	buf := make([]byte, 0, 128)
	value := []byte("f3a9c2")
	buf = resp.AppendArrayHeader(buf[:0], 3)
	buf = resp.AppendBulkString(buf, "PEXPIRE")
	buf = resp.AppendBulk(buf, value)
	buf = resp.AppendBulkInt(buf, 30000)
	fmt.Printf("%q\n", buf)
	// Output: "*3\r\n$7\r\nPEXPIRE\r\n$6\r\nf3a9c2\r\n$5\r\n30000\r\n"
}

// A simple string or error is one line: line breaks in its text become
// spaces.
func ExampleAppendError() {
	fmt.Printf("%q\n", resp.AppendError(nil, "ERR bad\r\nthing"))
	// Output: "-ERR bad  thing\r\n"
}

func ExampleAppendCommand() {
	buf := resp.AppendCommand(nil, "HELLO", "3")
	fmt.Printf("%q\n", buf)
	// Output: "*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n"
}

// A reply kept as its Shape and the offset of its frame in a buffer is read
// again without parsing: this is how mux keeps the replies it copies out of
// a connection's read buffer.
func ExampleShape() {
	in := []byte(":1\r\n$5\r\nhello\r\n")
	var kept []byte
	var shapes []resp.Shape
	var offs []int
	for len(in) > 0 {
		r, n, err := resp.Parse(in)
		if err != nil {
			panic(err)
		}
		offs = append(offs, len(kept))
		kept = append(kept, in[:n]...)
		shapes = append(shapes, r.Shape())
		in = in[n:]
	}
	offs = append(offs, len(kept))
	for i, s := range shapes {
		r := s.At(kept[offs[i]:offs[i+1]])
		fmt.Printf("%c %q %d\n", r.Type, r.Data, r.N)
	}
	// Output:
	// : "1" 1
	// $ "hello" 5
}
