package resp

import (
	"errors"
	"testing"
)

func TestQuickSmoke(t *testing.T) {
	cases := []string{
		"+OK\r\n", "-ERR x\r\n", ":-12\r\n", "$5\r\nhello\r\n", "$-1\r\n", "*-1\r\n", "*0\r\n",
		"*2\r\n$1\r\na\r\n:1\r\n", "_\r\n", "#t\r\n", ",3.14\r\n", ",-inf\r\n", "(123456789012345678901234567890\r\n",
		"!5\r\nERR x\r\n", "=7\r\ntxt:abc\r\n", "%1\r\n+k\r\n*1\r\n:1\r\n", "~1\r\n+a\r\n", "|1\r\n+ttl\r\n:3\r\n+val\r\n", ">2\r\n+message\r\n+x\r\n",
	}
	for _, c := range cases {
		b := []byte(c)
		r, n, err := Parse(b)
		if err != nil || n != len(b) {
			t.Fatalf("%q: n=%d err=%v", c, n, err)
		}
		for i := 0; i < len(b); i++ {
			_, n2, err := Parse(b[:i])
			if !errors.Is(err, ErrIncomplete) || n2 != 0 {
				t.Fatalf("%q split %d: n=%d err=%v", c, i, n2, err)
			}
		}
		t.Logf("%q -> %v %#v", c, r, r.Value())
	}
	bad := []string{"*1\r\n$-2\r\n", "$99999999999\r\n", "?\r\n", ":12a\r\n", "#x\r\n", ",1e\r\n", "$3\r\nabcd\r\n", "+a\nb"}
	for _, c := range bad {
		_, _, err := Parse([]byte(c))
		if !errors.Is(err, ErrProtocol) {
			t.Fatalf("%q: err=%v", c, err)
		}
		t.Logf("%q -> %v", c, err)
	}
	buf := AppendSetNXPX(nil, "k", []byte("v"), 100)
	if string(buf) != "*6\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$2\r\nNX\r\n$2\r\nPX\r\n$3\r\n100\r\n" {
		t.Fatalf("%q", buf)
	}
}
