package redlock

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/redmux/redmux/resp"
)

// fencedReply's direct read of the usual answer (fencedRaw) must agree
// with the general one (fencedIter) on every frame it accepts, and leave
// every other form to it: numbers of any length and sign, RESP3's
// attributes, other element types, other lengths.
func TestFencedReplyFastPathAgrees(t *testing.T) {
	frames := []string{
		"*3\r\n:1\r\n:0\r\n:0\r\n",
		"*3\r\n:0\r\n:123456789\r\n:1\r\n",
		"*3\r\n:1\r\n:999999999999999999\r\n:0\r\n",  // 18 digits: read directly
		"*3\r\n:1\r\n:9007199254740993\r\n:0\r\n",    // above the tokens' bound: read, judged by fence
		"*3\r\n:1\r\n:1000000000000000000\r\n:0\r\n", // 19 digits: the general read
		"*3\r\n:1\r\n:-5\r\n:0\r\n",
		"*3\r\n:-1\r\n:5\r\n:0\r\n",
		"*3\r\n:1\r\n:+5\r\n:0\r\n",
		"*3\r\n:1\r\n$1\r\n5\r\n:0\r\n",
		"*3\r\n:1\r\n:5\r\n_\r\n",
		"|1\r\n+a\r\n+b\r\n*3\r\n:1\r\n:7\r\n:0\r\n",
		"*2\r\n:1\r\n:7\r\n",
		"*4\r\n:1\r\n:7\r\n:0\r\n:0\r\n",
		":1\r\n",
		"*3\r\n:01\r\n:007\r\n:0\r\n",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		f := "*3\r\n"
		for k := 0; k < 3; k++ {
			f += ":" + strconv.FormatInt(rng.Int64N(1e18)>>rng.IntN(60), 10) + "\r\n"
		}
		frames = append(frames, f)
	}
	fast := 0
	for _, f := range frames {
		r, n, err := resp.Parse([]byte(f))
		if err != nil || n != len(f) {
			continue // not a frame mux would deliver
		}
		g1, c1, s1, ok1 := fencedReply(r)
		g2, c2, s2, ok2 := fencedIter(r)
		if r.Type != resp.TypeArray || r.Len() != 3 {
			g2, c2, s2, ok2 = 0, 0, false, false
		}
		if g1 != g2 || c1 != c2 || s1 != s2 || ok1 != ok2 {
			t.Fatalf("%q: fencedReply %d %d %v %v, the general read %d %d %v %v", f, g1, c1, s1, ok1, g2, c2, s2, ok2)
		}
		if _, ok := fencedRaw(r.Raw); ok {
			fast++
		}
	}
	if fast < 2000 {
		t.Fatalf("only %d frames read directly: the fast path is not taken", fast)
	}
}

// A single lock's usual answer, -1 - counter, is a grant whose counter is
// not stale; a non-negative integer (another command's answer: a release,
// an extension, WAIT's count) and one below the tokens' bound are not the
// script's.
func TestFencedReplyInteger(t *testing.T) {
	for _, c := range []struct {
		frame   string
		counter int64
		ok      bool
	}{
		{":-1\r\n", 0, true},
		{":-124\r\n", 123, true},
		{":-1764484000000001\r\n", 1764484000000000, true},
		{":-9007199254740992\r\n", 0, false}, // counter 2^53 - 1: not a token
		{":0\r\n", 0, false},
		{":1\r\n", 0, false},
		{":42\r\n", 0, false},
	} {
		r, _, err := resp.Parse([]byte(c.frame))
		if err != nil {
			t.Fatal(err)
		}
		g, v, stale, ok := fencedReply(r)
		if ok != c.ok || ok && (g != 1 || v != c.counter || stale) || !ok && (g != 0 || v != 0) {
			t.Fatalf("%q: fencedReply %d %d %v %v", c.frame, g, v, stale, ok)
		}
	}
}
