package fakeserver

import (
	"math"
	"sort"
	"strconv"
	"strings"
)

// zsetVal is a sorted set: members ordered by score, then by member bytes,
// as Redis orders them. items is kept sorted and scores indexes it by
// member, so a lookup is O(1) and an insert or removal a binary search and
// one copy of the slice (O(n), as Redis's small listpack-encoded sets are;
// the fake is not meant for sets of millions).
type zsetVal struct {
	items  []zitem
	scores map[string]float64
}

type zitem struct {
	member string
	score  float64
}

func newZset() *zsetVal { return &zsetVal{scores: map[string]float64{}} }

func (z *zsetVal) len() int { return len(z.items) }

// less is Redis's order: by score, then by member (memcmp).
func zless(a, b zitem) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	return a.member < b.member
}

// find returns the index of it in items (it must be there).
func (z *zsetVal) find(it zitem) int {
	return sort.Search(len(z.items), func(i int) bool { return !zless(z.items[i], it) })
}

func (z *zsetVal) score(m string) (float64, bool) {
	s, ok := z.scores[m]
	return s, ok
}

// set gives m the score s, adding it when absent. A score of -0 is kept
// as 0, as Redis's small sets keep it (their listpack stores an integral
// score as an integer).
func (z *zsetVal) set(m string, s float64) {
	if s == 0 {
		s = 0
	}
	if old, ok := z.scores[m]; ok {
		if old == s {
			return
		}
		z.removeItem(zitem{m, old})
	}
	z.scores[m] = s
	it := zitem{m, s}
	i := z.find(it)
	z.items = append(z.items, zitem{})
	copy(z.items[i+1:], z.items[i:])
	z.items[i] = it
}

// del removes m; it reports whether m was there.
func (z *zsetVal) del(m string) bool {
	s, ok := z.scores[m]
	if !ok {
		return false
	}
	delete(z.scores, m)
	z.removeItem(zitem{m, s})
	return true
}

func (z *zsetVal) removeItem(it zitem) {
	i := z.find(it)
	copy(z.items[i:], z.items[i+1:])
	z.items[len(z.items)-1] = zitem{}
	z.items = z.items[:len(z.items)-1]
}

func (z *zsetVal) clone() *zsetVal {
	c := &zsetVal{items: append([]zitem(nil), z.items...), scores: make(map[string]float64, len(z.scores))}
	for m, s := range z.scores {
		c.scores[m] = s
	}
	return c
}

// parseScore parses a score as Redis's getDoubleFromObject does (strtod):
// decimal or hexadecimal, "inf" and "infinity" with either sign; no
// leading space, no trailing byte, no NaN, nothing out of a double's
// range (overflow, or a non-zero literal that underflows to zero).
func parseScore(b []byte) (float64, bool) {
	if len(b) == 0 || strings.IndexByte(" \t\n\r\v\f", b[0]) >= 0 || bytesHas(b, '_') {
		return 0, false // '_' is Go's digit separator, not strtod's
	}
	s := string(b)
	body := strings.ToLower(strings.TrimLeft(s, "+-"))
	hex := strings.HasPrefix(body, "0x")
	if hex && !strings.Contains(body, "p") {
		s += "p0" // strtod's hexadecimal needs no exponent; Go's does
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) {
		return 0, false
	}
	if f == 0 {
		mark := "e"
		if hex {
			body, mark = body[2:], "p"
		}
		if i := strings.Index(body, mark); i >= 0 {
			body = body[:i]
		}
		if strings.Trim(body, "0.") != "" {
			return 0, false // underflow: strtod's ERANGE
		}
	}
	return f, true
}

func bytesHas(b []byte, c byte) bool {
	for _, x := range b {
		if x == c {
			return true
		}
	}
	return false
}

// formatScore is Redis 7.0's addReplyDouble text: printf's "%.17g"
// (which Go's 'g' with 17 digits writes alike), and "inf" or "-inf".
func formatScore(f float64) string {
	if math.IsInf(f, 0) {
		if f > 0 {
			return "inf"
		}
		return "-inf"
	}
	return strconv.FormatFloat(f, 'g', 17, 64)
}
