package redlock

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/redmux/redmux/resp"
)

// fencedScript's direct read of the usual answer (fencedRaw) must agree
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
		g1, c1, s1, ok1 := fencedScript(r)
		g2, c2, s2, ok2 := fencedIter(r)
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

// A fenced single lock's three answers (SET, ZREVRANGE, ZADD), in RESP2
// and RESP3: granted or refused; the counter's top member and score, stale
// where the member is not the tag under a strict tag or the score is no
// counter; wrote only where ZADD said it raised and the read was below the
// guess; a counter of the string form (WRONGTYPE) stale and to be
// converted; anything else not the commands' answers.
func TestFencedPipe(t *testing.T) {
	const tag = "ab12"
	for _, c := range []struct {
		frames, tag string
		want        fencedAns
		ok          bool
	}{
		{"+OK\r\n*0\r\n:1\r\n", "=" + tag, fencedAns{granted: true, wrote: true}, true},
		{"+OK\r\n*0\r\n:0\r\n", "=" + tag, fencedAns{granted: true}, true}, // strict and empty: XX wrote nothing
		{"$-1\r\n*2\r\n$4\r\nab12\r\n$2\r\n50\r\n:1\r\n", "=" + tag, fencedAns{counter: 50, wrote: true}, true},
		{"_\r\n*1\r\n*2\r\n$4\r\nab12\r\n,50\r\n:1\r\n", "=" + tag, fencedAns{counter: 50, wrote: true}, true},
		{"+OK\r\n*2\r\n$4\r\ncd34\r\n$2\r\n50\r\n:0\r\n", "=" + tag, fencedAns{granted: true, counter: 50, stale: true}, true},
		{"+OK\r\n*2\r\n$4\r\ncd34\r\n$2\r\n50\r\n:1\r\n", tag, fencedAns{granted: true, counter: 50, wrote: true}, true},
		{"+OK\r\n*2\r\n$4\r\nab12\r\n$3\r\n500\r\n:0\r\n", tag, fencedAns{granted: true, counter: 500}, true},
		{"+OK\r\n*2\r\n$4\r\nab12\r\n$3\r\n5.5\r\n:1\r\n", tag, fencedAns{granted: true, counter: 0, stale: true}, true},
		{"+OK\r\n*2\r\n$0\r\n\r\n$16\r\n9007199254740992\r\n:1\r\n", "", fencedAns{granted: true, stale: true}, true},
		{"+OK\r\n*2\r\n$0\r\n\r\n$5\r\n1e+20\r\n:1\r\n", "", fencedAns{granted: true, stale: true}, true},
		{"+OK\r\n*1\r\n*2\r\n$0\r\n\r\n,inf\r\n:0\r\n", "", fencedAns{granted: true, stale: true}, true},
		{"|1\r\n+a\r\n+b\r\n+OK\r\n|1\r\n+a\r\n+b\r\n*2\r\n$4\r\nab12\r\n$2\r\n50\r\n:1\r\n", tag,
			fencedAns{granted: true, counter: 50, wrote: true}, true}, // RESP3 attributes: the general read
		{"+OK\r\n-WRONGTYPE Operation against a key holding the wrong kind of value\r\n-WRONGTYPE x\r\n", tag,
			fencedAns{granted: true, stale: true, migrate: true}, true},
		{"$-1\r\n-WRONGTYPE x\r\n:0\r\n", tag, fencedAns{stale: true, migrate: true}, true},
		{"+OK\r\n*0\r\n:1\r\n", "", fencedAns{granted: true, wrote: true}, true},
		{"-ERR x\r\n*0\r\n:1\r\n", "", fencedAns{}, false},
		{"+OK\r\n-ERR x\r\n:1\r\n", "", fencedAns{}, false},
		{"+OK\r\n*0\r\n-OOM x\r\n", "", fencedAns{}, false},
		{"+OK\r\n*3\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n:1\r\n", "", fencedAns{}, false},
		{"+OK\r\n*0\r\n$1\r\n1\r\n", "", fencedAns{}, false},
		{"+OK\r\n*-1\r\n:1\r\n", "", fencedAns{}, false},
		{"+OK\r\n:5\r\n:1\r\n", "", fencedAns{}, false},
		{":1\r\n*0\r\n:1\r\n", "", fencedAns{}, false},
	} {
		var rs [3]resp.Reply
		b := []byte(c.frames)
		for k := range rs {
			r, n, err := resp.Parse(b)
			if err != nil {
				t.Fatalf("%q: %v", c.frames, err)
			}
			rs[k], b = r, b[n:]
		}
		if len(b) != 0 {
			t.Fatalf("%q: %d bytes left", c.frames, len(b))
		}
		a, ok := fencedPipe(rs[0], rs[1], rs[2], c.tag, 100)
		if ok != c.ok || ok && a != c.want {
			t.Fatalf("%q (tag %q): %+v %v, want %+v %v", c.frames, c.tag, a, ok, c.want, c.ok)
		}
	}
}

// ZREVRANGE's direct read (zrevTopRaw) agrees with the general one
// (topPair) on every frame it accepts: one-member answers in RESP2 and
// RESP3 with scores of any text; and it reads most of them itself.
func TestZRevTopFastPathAgrees(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	bulk := func(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }
	members := []string{"ab12", "cd34", ""}
	scores := []string{"0", "50", "100", "99", "5.5", "1e+20", "inf", "9007199254740991", "9007199254740992", "-3", "12345678901234567"}
	fast := 0
	for i := 0; i < 3000; i++ {
		m, sc := members[rng.IntN(len(members))], scores[rng.IntN(len(scores))]
		var f string
		switch rng.IntN(4) {
		case 0:
			f = "*2\r\n" + bulk(m) + bulk(sc)
		case 1:
			f = "*1\r\n*2\r\n" + bulk(m) + "," + sc + "\r\n"
		case 2:
			f = "*1\r\n*2\r\n" + bulk(m) + bulk(sc)
		default:
			f = "*2\r\n" + bulk(m) + ":" + sc + "\r\n"
		}
		r, n, err := resp.Parse([]byte(f))
		if err != nil || n != len(f) {
			continue
		}
		m1, s1, ok1 := zrevTopRaw(r.Raw)
		mr, sr, ok2 := topPair(r)
		if !ok1 {
			continue
		}
		fast++
		if !ok2 || string(m1) != string(mr.Data) || string(s1) != string(sr.Data) {
			t.Fatalf("%q: direct read %q %q, general %q %q %v", f, m1, s1, mr.Data, sr.Data, ok2)
		}
	}
	if fast < 500 {
		t.Fatalf("only %d frames read directly", fast)
	}
}
