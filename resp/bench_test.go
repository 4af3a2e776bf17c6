package resp_test

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/redmux/redmux/resp"
	"github.com/tidwall/redcon"
)

const benchSHA = "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"

var benchValue = []byte("0123456789abcdefghij")

// Lock-path frames, parsed one at a time.
var lockReplies = []struct {
	name  string
	frame []byte
}{
	{"OK", []byte("+OK\r\n")},
	{"NilBulk", []byte("$-1\r\n")},
	{"One", []byte(":1\r\n")},
	{"Zero", []byte(":0\r\n")},
	{"NOSCRIPT", []byte("-NOSCRIPT No matching script. Please use EVAL.\r\n")},
}

func BenchmarkParseLockReply(b *testing.B) {
	for _, lr := range lockReplies {
		b.Run(lr.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(lr.frame)))
			var p resp.Parser
			hits := 0
			for i := 0; i < b.N; i++ {
				r, _, err := p.Parse(lr.frame)
				if err != nil {
					b.Fatal(err)
				}
				if r.IsOK() || r.IsNil() || r.HasErrorPrefix("NOSCRIPT") {
					hits++
				} else if v, ok := r.Int(); ok && v >= 0 {
					hits++
				}
			}
			if hits != b.N {
				b.Fatal("helpers missed")
			}
		})
	}
}

var sinkInt int

// BenchmarkRereadLockReply reads a kept lock reply again: by parsing its
// frame (what mux did for every success check and every Reply) or through
// the Shape its first parse left (what it does now).
func BenchmarkRereadLockReply(b *testing.B) {
	for _, lr := range lockReplies {
		var p resp.Parser
		r0, _, err := p.Parse(lr.frame)
		if err != nil {
			b.Fatal(err)
		}
		sh := r0.Shape()
		b.Run(lr.name+"/how=parse", func(b *testing.B) {
			b.ReportAllocs()
			hits := 0
			for i := 0; i < b.N; i++ {
				r, _, err := p.Parse(lr.frame)
				if err == nil && (r.IsOK() || r.N == 1) {
					hits++
				}
			}
			sinkInt = hits
		})
		b.Run(lr.name+"/how=shape", func(b *testing.B) {
			b.ReportAllocs()
			hits := 0
			for i := 0; i < b.N; i++ {
				if r := sh.At(lr.frame); r.IsOK() || r.N == 1 {
					hits++
				}
			}
			sinkInt = hits
		})
	}
}

func BenchmarkEncodeCommand(b *testing.B) {
	buf := make([]byte, 0, 512)
	key := "lock:orders:12345"
	b.Run("AppendCommand", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			buf = resp.AppendCommand(buf[:0], "SET", key, "0123456789abcdefghij", "NX", "PX", "30000")
		}
		b.SetBytes(int64(len(buf)))
	})
	b.Run("ByArgument", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			buf = resp.AppendArrayHeader(buf[:0], 6)
			buf = resp.AppendBulkString(buf, "SET")
			buf = resp.AppendBulkString(buf, key)
			buf = resp.AppendBulk(buf, benchValue)
			buf = resp.AppendBulkString(buf, "NX")
			buf = resp.AppendBulkString(buf, "PX")
			buf = resp.AppendBulkInt(buf, 30000)
		}
		b.SetBytes(int64(len(buf)))
	})
}

// Data sets for the side-by-side throughput comparison. All are RESP2, the
// only protocol redcon reads.
func benchSets() []struct {
	name string
	data []byte
} {
	// A typical reply mix: statuses, integers, nils, values, errors, arrays.
	var mix []byte
	for i := 0; len(mix) < 8<<10; i++ {
		mix = append(mix, "+OK\r\n"...)
		mix = resp.AppendInt(mix, int64(i))
		mix = resp.AppendNullBulk(mix)
		mix = resp.AppendBulk(mix, benchValue)
		mix = resp.AppendError(mix, "NOSCRIPT No matching script. Please use EVAL.")
		mix = resp.AppendBulk(mix, bytes.Repeat([]byte{'v'}, 100+i%50))
		mix = resp.AppendArrayHeader(mix, 3)
		mix = resp.AppendBulkString(mix, "field")
		mix = resp.AppendInt(mix, -1)
		mix = resp.AppendBulk(mix, benchValue)
		mix = resp.AppendNullArray(mix)
	}
	// The lock path's replies for 200 acquisitions on 5 nodes, pipelined.
	var lock []byte
	for i := 0; i < 1000; i++ {
		switch i % 4 {
		case 0, 1:
			lock = append(lock, "+OK\r\n"...)
		case 2:
			lock = append(lock, "$-1\r\n"...)
		default:
			lock = append(lock, ":1\r\n"...)
		}
	}
	// One large array of 1000 bulks of 16..79 bytes (an LRANGE/MGET reply).
	arr := resp.AppendArrayHeader(nil, 1000)
	for i := 0; i < 1000; i++ {
		arr = resp.AppendBulk(arr, bytes.Repeat([]byte{'a' + byte(i%26)}, 16+i%64))
	}
	// A command stream as a server reads it: the lock commands.
	var cmds []byte
	for i := 0; i < 300; i++ {
		key := "lock:orders:" + strconv.Itoa(i)
		v := string(benchValue)
		cmds = resp.AppendCommand(cmds, "SET", key, v, "NX", "PX", "30000")
		cmds = resp.AppendCommand(cmds, "EVALSHA", benchSHA, "1", key, v)
		cmds = resp.AppendCommand(cmds, "EVALSHA", benchSHA, "1", key, v, "30000")
	}
	return []struct {
		name string
		data []byte
	}{{"mix", mix}, {"lockpipe", lock}, {"bigarray", arr}, {"commands", cmds}}
}

// BenchmarkParseVsRedcon parses the same bytes with redmux's parser and with
// redcon's own readers, in one run. Every implementation walks the buffer
// frame by frame and touches each frame's payload, so the work is the same.
func BenchmarkParseVsRedcon(b *testing.B) {
	for _, set := range benchSets() {
		data := set.data
		b.Run("set="+set.name+"/impl=redmux", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			var p resp.Parser
			sink := 0
			for i := 0; i < b.N; i++ {
				for buf := data; len(buf) > 0; {
					r, n, err := p.Parse(buf)
					if err != nil {
						b.Fatal(err)
					}
					sink += len(r.Data)
					buf = buf[n:]
				}
			}
			_ = sink
		})
		b.Run("set="+set.name+"/impl=redcon", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			sink := 0
			for i := 0; i < b.N; i++ {
				for buf := data; len(buf) > 0; {
					n, r := redcon.ReadNextRESP(buf)
					if n == 0 {
						b.Fatal("redcon: bad frame")
					}
					sink += len(r.Data)
					buf = buf[n:]
				}
			}
			_ = sink
		})
		if set.name == "bigarray" || set.name == "commands" {
			// Visit every element too: Iter against ForEach.
			b.Run("set="+set.name+"/impl=redmux-iter", func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(data)))
				var p resp.Parser
				sink := 0
				for i := 0; i < b.N; i++ {
					for buf := data; len(buf) > 0; {
						r, n, err := p.Parse(buf)
						if err != nil {
							b.Fatal(err)
						}
						it := r.Iter()
						var c resp.Reply
						for it.Next(&c) {
							sink += len(c.Data)
						}
						buf = buf[n:]
					}
				}
				_ = sink
			})
			b.Run("set="+set.name+"/impl=redcon-foreach", func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(data)))
				sink := 0
				for i := 0; i < b.N; i++ {
					for buf := data; len(buf) > 0; {
						n, r := redcon.ReadNextRESP(buf)
						if n == 0 {
							b.Fatal("redcon: bad frame")
						}
						r.ForEach(func(c redcon.RESP) bool { sink += len(c.Data); return true })
						buf = buf[n:]
					}
				}
				_ = sink
			})
		}
		if set.name == "commands" {
			// redcon's server-side command readers.
			b.Run("set=commands/impl=redcon-nextcommand", func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(data)))
				args := make([][]byte, 0, 8)
				sink := 0
				for i := 0; i < b.N; i++ {
					for buf := data; len(buf) > 0; {
						complete, a, _, left, err := redcon.ReadNextCommand(buf, args)
						if err != nil || !complete {
							b.Fatal("redcon: bad command", err)
						}
						for _, x := range a {
							sink += len(x)
						}
						args = a
						buf = left
					}
				}
				_ = sink
			})
			b.Run("set=commands/impl=redcon-reader", func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(data)))
				var rd bytes.Reader
				sink := 0
				for i := 0; i < b.N; i++ {
					rd.Reset(data)
					r := redcon.NewReader(&rd)
					for got := 0; got < 900; {
						cmds, err := r.ReadCommands()
						if err != nil {
							b.Fatal(err)
						}
						for _, c := range cmds {
							sink += len(c.Args)
						}
						got += len(cmds)
					}
				}
				_ = sink
			})
		}
	}
}
