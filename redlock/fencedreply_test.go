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

// A fenced single lock's three answers (SET, ZREVRANGE of the top two,
// ZADD), in RESP2 and RESP3, guess 100 (docs/FENCING.md, "Raise first"):
// granted or refused; the counter the top score, stale where it is no
// counter or the top member is not the tag under a strict tag; wrote only
// where ZADD raised (CH 1), the top is the tag at exactly the guess and
// the second member's score is a counter below it; a counter of the
// string form (WRONGTYPE) stale and to be converted; anything else not
// the commands' answers.
func TestFencedPipe(t *testing.T) {
	const tag = "ab12"
	b := func(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }
	two := func(m1, s1, m2, s2 string) string { return "*4\r\n" + b(m1) + b(s1) + b(m2) + b(s2) }
	two3 := func(m1, s1, m2, s2 string) string {
		return "*2\r\n*2\r\n" + b(m1) + "," + s1 + "\r\n*2\r\n" + b(m2) + "," + s2 + "\r\n"
	}
	for _, c := range []struct {
		frames, tag string
		want        fencedAns
		ok          bool
	}{
		{"+OK\r\n*0\r\n:1\r\n", "=" + tag, fencedAns{granted: true}, true}, // read empty: nothing is written
		{"+OK\r\n*0\r\n:0\r\n", "=" + tag, fencedAns{granted: true}, true}, // strict and empty: XX wrote nothing
		{"$-1\r\n*2\r\n$4\r\nab12\r\n$3\r\n100\r\n:1\r\n", "=" + tag, fencedAns{counter: 100, wrote: true}, true},
		{"_\r\n*1\r\n*2\r\n$4\r\nab12\r\n,100\r\n:1\r\n", "=" + tag, fencedAns{counter: 100, wrote: true}, true},
		{"+OK\r\n*2\r\n$4\r\ncd34\r\n$3\r\n150\r\n:0\r\n", "=" + tag, fencedAns{granted: true, counter: 150, stale: true}, true},
		{"+OK\r\n*2\r\n$4\r\ncd34\r\n$3\r\n150\r\n:1\r\n", tag, fencedAns{granted: true, counter: 150}, true},
		{"+OK\r\n*2\r\n$4\r\nab12\r\n$3\r\n500\r\n:0\r\n", tag, fencedAns{granted: true, counter: 500}, true},
		{"+OK\r\n*2\r\n$4\r\nab12\r\n$3\r\n500\r\n:1\r\n", tag, fencedAns{granted: true, counter: 500}, true}, // raised past
		// the tag already at the guess: another's raise or write-back
		{"+OK\r\n*2\r\n$4\r\nab12\r\n$3\r\n100\r\n:0\r\n", tag, fencedAns{granted: true, counter: 100}, true},
		// a tie: the other member was at the guess before the raise
		{"+OK\r\n" + two("ab12", "100", "cd34", "100") + ":1\r\n", tag, fencedAns{granted: true, counter: 100}, true},
		{"+OK\r\n" + two3("ab12", "100", "cd34", "100") + ":1\r\n", tag, fencedAns{granted: true, counter: 100}, true},
		{"+OK\r\n" + two("ab12", "100", "cd34", "99") + ":1\r\n", tag, fencedAns{granted: true, counter: 100, wrote: true}, true},
		{"+OK\r\n" + two3("ab12", "100", "cd34", "99") + ":1\r\n", tag, fencedAns{granted: true, counter: 100, wrote: true}, true},
		{"+OK\r\n" + two("ab12", "100", "cd34", "5.5") + ":1\r\n", tag, fencedAns{granted: true, counter: 100}, true},
		{"+OK\r\n" + two3("ab12", "100", "cd34", "-inf") + ":1\r\n", tag, fencedAns{granted: true, counter: 100}, true},
		// strict: a copied member between the tag's old score and the guess
		{"+OK\r\n" + two("ab12", "100", "cd34", "70") + ":1\r\n", "=" + tag, fencedAns{granted: true, counter: 100, wrote: true}, true},
		{"+OK\r\n" + two("cd34", "120", "ab12", "100") + ":1\r\n", "=" + tag, fencedAns{granted: true, counter: 120, stale: true}, true},
		{"+OK\r\n*2\r\n$4\r\nab12\r\n$3\r\n5.5\r\n:1\r\n", tag, fencedAns{granted: true, counter: 0, stale: true}, true},
		{"+OK\r\n*2\r\n$0\r\n\r\n$16\r\n9007199254740992\r\n:1\r\n", "", fencedAns{granted: true, stale: true}, true},
		{"+OK\r\n*2\r\n$0\r\n\r\n$5\r\n1e+20\r\n:1\r\n", "", fencedAns{granted: true, stale: true}, true},
		{"+OK\r\n*1\r\n*2\r\n$0\r\n\r\n,inf\r\n:0\r\n", "", fencedAns{granted: true, stale: true}, true},
		{"|1\r\n+a\r\n+b\r\n+OK\r\n|1\r\n+a\r\n+b\r\n*2\r\n$4\r\nab12\r\n$3\r\n100\r\n:1\r\n", tag,
			fencedAns{granted: true, counter: 100, wrote: true}, true}, // RESP3 attributes: the general read
		{"+OK\r\n-WRONGTYPE Operation against a key holding the wrong kind of value\r\n-WRONGTYPE x\r\n", tag,
			fencedAns{granted: true, stale: true, migrate: true}, true},
		{"$-1\r\n-WRONGTYPE x\r\n:0\r\n", tag, fencedAns{stale: true, migrate: true}, true},
		{"-ERR x\r\n*0\r\n:1\r\n", "", fencedAns{}, false},
		{"+OK\r\n-ERR x\r\n:1\r\n", "", fencedAns{}, false},
		{"+OK\r\n*0\r\n-OOM x\r\n", "", fencedAns{}, false},
		{"+OK\r\n*3\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n:1\r\n", "", fencedAns{}, false},
		{"+OK\r\n*6\r\n" + b("a") + b("3") + b("b") + b("2") + b("c") + b("1") + ":1\r\n", "", fencedAns{}, false},
		{"+OK\r\n*0\r\n$1\r\n1\r\n", "", fencedAns{}, false},
		{"+OK\r\n*-1\r\n:1\r\n", "", fencedAns{}, false},
		{"+OK\r\n:5\r\n:1\r\n", "", fencedAns{}, false},
		{":1\r\n*0\r\n:1\r\n", "", fencedAns{}, false},
	} {
		var rs [3]resp.Reply
		buf := []byte(c.frames)
		for k := range rs {
			r, n, err := resp.Parse(buf)
			if err != nil {
				t.Fatalf("%q: %v", c.frames, err)
			}
			rs[k], buf = r, buf[n:]
		}
		if len(buf) != 0 {
			t.Fatalf("%q: %d bytes left", c.frames, len(buf))
		}
		a, ok := fencedPipe(rs[0], rs[1], rs[2], c.tag, 100)
		if ok != c.ok || ok && a != c.want {
			t.Fatalf("%q (tag %q): %+v %v, want %+v %v", c.frames, c.tag, a, ok, c.want, c.ok)
		}
	}
}

// ZREVRANGE's direct read (zrevRaw) agrees with the general one
// (zrevIter) on every frame it accepts: one- and two-member answers in
// RESP2 and RESP3 with scores of any text; and it reads most of them
// itself.
func TestZRevTopFastPathAgrees(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	bulk := func(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }
	members := []string{"ab12", "cd34", ""}
	scores := []string{"0", "50", "100", "99", "5.5", "1e+20", "inf", "9007199254740991", "9007199254740992", "-3", "12345678901234567"}
	pick := func() (string, string) { return members[rng.IntN(len(members))], scores[rng.IntN(len(scores))] }
	fast := 0
	for i := 0; i < 4000; i++ {
		k := 1 + rng.IntN(2)
		form := rng.IntN(4)
		var body string
		for j := 0; j < k; j++ {
			m, sc := pick()
			switch form {
			case 0:
				body += bulk(m) + bulk(sc)
			case 1:
				body += "*2\r\n" + bulk(m) + "," + sc + "\r\n"
			case 2:
				body += "*2\r\n" + bulk(m) + bulk(sc)
			default:
				body += bulk(m) + ":" + sc + "\r\n"
			}
		}
		n := k
		if form == 0 || form == 3 {
			n = 2 * k
		}
		f := "*" + strconv.Itoa(n) + "\r\n" + body
		r, used, err := resp.Parse([]byte(f))
		if err != nil || used != len(f) {
			continue
		}
		p1, n1, ok1 := zrevRaw(r.Raw)
		p2, n2, ok2 := zrevIter(r)
		if !ok1 {
			continue
		}
		fast++
		if !ok2 || n1 != n2 || n1 != k {
			t.Fatalf("%q: direct read %d %v, general %d %v", f, n1, ok1, n2, ok2)
		}
		for j := 0; j < n1; j++ {
			if string(p1[j].member) != string(p2[j].member) || string(p1[j].score) != string(p2[j].score) {
				t.Fatalf("%q: member %d: direct %q %q, general %q %q", f, j, p1[j].member, p1[j].score, p2[j].member, p2[j].score)
			}
		}
	}
	if fast < 1000 {
		t.Fatalf("only %d frames read directly", fast)
	}
}
