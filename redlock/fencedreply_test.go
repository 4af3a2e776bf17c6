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

// The transaction's EXEC array, in RESP2 and RESP3: granted or refused;
// the counter's top member and score, stale where the member is not the
// tag under a strict tag or the score is no counter; wrote only where
// ZADD said it raised and the read was below the guess; a counter of the
// string form (WRONGTYPE) stale and to be converted; anything else not
// the transaction's answer.
func TestFencedReplyTransaction(t *testing.T) {
	const tag = "ab12"
	for _, c := range []struct {
		frame, tag string
		want       fencedAns
		ok         bool
	}{
		{"*3\r\n+OK\r\n*0\r\n:1\r\n", "=" + tag, fencedAns{granted: true, wrote: true}, true},
		{"*3\r\n+OK\r\n*0\r\n:0\r\n", "=" + tag, fencedAns{granted: true}, true}, // strict and empty: XX wrote nothing
		{"*3\r\n$-1\r\n*2\r\n$4\r\nab12\r\n$2\r\n50\r\n:1\r\n", "=" + tag, fencedAns{counter: 50, wrote: true}, true},
		{"*3\r\n_\r\n*1\r\n*2\r\n$4\r\nab12\r\n,50\r\n:1\r\n", "=" + tag, fencedAns{counter: 50, wrote: true}, true},
		{"*3\r\n+OK\r\n*2\r\n$4\r\ncd34\r\n$2\r\n50\r\n:0\r\n", "=" + tag, fencedAns{granted: true, counter: 50, stale: true}, true},
		{"*3\r\n+OK\r\n*2\r\n$4\r\ncd34\r\n$2\r\n50\r\n:1\r\n", tag, fencedAns{granted: true, counter: 50, wrote: true}, true},
		{"*3\r\n+OK\r\n*2\r\n$4\r\nab12\r\n$3\r\n500\r\n:0\r\n", tag, fencedAns{granted: true, counter: 500}, true},
		{"*3\r\n+OK\r\n*2\r\n$4\r\nab12\r\n$3\r\n5.5\r\n:1\r\n", tag, fencedAns{granted: true, counter: 0, stale: true}, true},
		{"*3\r\n+OK\r\n*2\r\n$0\r\n\r\n$16\r\n9007199254740992\r\n:1\r\n", "", fencedAns{granted: true, stale: true}, true},
		{"*3\r\n+OK\r\n*2\r\n$0\r\n\r\n$5\r\n1e+20\r\n:1\r\n", "", fencedAns{granted: true, stale: true}, true},
		{"*3\r\n+OK\r\n*1\r\n*2\r\n$0\r\n\r\n,inf\r\n:0\r\n", "", fencedAns{granted: true, stale: true}, true},
		{"*3\r\n+OK\r\n-WRONGTYPE Operation against a key holding the wrong kind of value\r\n-WRONGTYPE x\r\n", tag,
			fencedAns{granted: true, stale: true, migrate: true}, true},
		{"*3\r\n+OK\r\n*0\r\n:1\r\n", "", fencedAns{granted: true, wrote: true}, true},
		{"*3\r\n-ERR x\r\n*0\r\n:1\r\n", "", fencedAns{}, false},
		{"*3\r\n+OK\r\n*3\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n:1\r\n", "", fencedAns{}, false},
		{"*3\r\n+OK\r\n*0\r\n$1\r\n1\r\n", "", fencedAns{}, false},
		{"*2\r\n+OK\r\n*0\r\n", "", fencedAns{}, false},
		{":-5\r\n", "", fencedAns{}, false},
	} {
		r, _, err := resp.Parse([]byte(c.frame))
		if err != nil {
			t.Fatalf("%q: %v", c.frame, err)
		}
		a, ok := fencedReply(r, c.tag, 100)
		if ok != c.ok || ok && a != c.want {
			t.Fatalf("%q (tag %q): %+v %v, want %+v %v", c.frame, c.tag, a, ok, c.want, c.ok)
		}
	}
}

// The transaction's direct read (fencedTxnRaw) agrees with the general one
// (fencedTxn) on every frame it accepts: EXEC arrays drawn from every
// grant, counter and raise form, in RESP2 and RESP3, with scores of any
// text and tags strict or not; and it reads most of them itself.
func TestFencedTxnFastPathAgrees(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	bulk := func(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }
	members := []string{"ab12", "cd34", ""}
	scores := []string{"0", "50", "100", "99", "5.5", "1e+20", "inf", "9007199254740991", "9007199254740992", "-3", "12345678901234567"}
	fast := 0
	for i := 0; i < 3000; i++ {
		f := "*3\r\n" + []string{"+OK\r\n", "_\r\n", "$-1\r\n", "-ERR x\r\n"}[rng.IntN(4)]
		m, sc := members[rng.IntN(len(members))], scores[rng.IntN(len(scores))]
		switch rng.IntN(4) {
		case 0:
			f += "*0\r\n"
		case 1:
			f += "*2\r\n" + bulk(m) + bulk(sc)
		case 2:
			f += "*1\r\n*2\r\n" + bulk(m) + "," + sc + "\r\n"
		default:
			f += "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
		}
		f += []string{":0\r\n", ":1\r\n", "-WRONGTYPE x\r\n", ":2\r\n"}[rng.IntN(4)]
		r, n, err := resp.Parse([]byte(f))
		if err != nil || n != len(f) {
			continue
		}
		tag := []string{"ab12", "=ab12", ""}[rng.IntN(3)]
		a2, ok2 := fencedTxn(r, tag, 100)
		a1, ok1 := fencedTxnRaw(r.Raw, tag, 100)
		if !ok1 {
			continue
		}
		fast++
		if !ok2 || a1 != a2 {
			t.Fatalf("%q (tag %q): direct read %+v, general %+v %v", f, tag, a1, a2, ok2)
		}
	}
	if fast < 500 {
		t.Fatalf("only %d frames read directly", fast)
	}
}
