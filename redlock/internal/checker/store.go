package checker

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/redmux/redmux/redlock"
)

// fencedStore is the resource the locks protect: it keeps, per resource,
// the highest token it has seen and refuses lower ones (when fenced). It
// reports a stale write (one accepted from a holding granted before the
// newest holding whose write it accepted) and, with tokens, a regression:
// a holding granted after the one that wrote the highest token, whose own
// token is not higher.
type fencedStore struct {
	fenced                 bool
	mu                     sync.Mutex
	top                    map[string]uint64
	topGot                 map[string]time.Time // grant (Acquire's return) of the top token's holding
	newest                 map[string]time.Time // grant of the newest writer
	topValid               map[string]bool      // the top token's holding had validity when its Acquire returned
	writes, refused, stale atomic.Int64
}

func newStore(fenced bool) *fencedStore {
	return &fencedStore{fenced: fenced, top: map[string]uint64{}, topGot: map[string]time.Time{}, topValid: map[string]bool{}, newest: map[string]time.Time{}}
}

// write is a write to resource r by the holding granted at got (Acquire's
// return) with token, valid when got was read if valid. It returns whether
// the write was stale and, if the token regressed, the top token it did
// not exceed. Grants are ordered by got only between holdings that had
// validity at got: their claims cannot overlap (the overlap check), so
// the later got is the later grant. A holding whose validity had run out
// before its Acquire returned (a descheduled goroutine on a loaded
// machine) may have been granted before the top token's holding.
func (s *fencedStore) write(r string, got time.Time, valid bool, token uint64) (stale bool, regressed bool, top uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	top, seen := s.top[r], !s.topGot[r].IsZero()
	if s.fenced && seen && valid && s.topValid[r] && got.After(s.topGot[r]) && token <= top {
		regressed = true
	}
	if s.fenced && token < top {
		s.refused.Add(1)
		return false, regressed, top
	}
	if !seen || token > top || !s.fenced {
		s.top[r], s.topGot[r], s.topValid[r] = token, got, valid
	}
	s.writes.Add(1)
	if n, ok := s.newest[r]; ok && got.Before(n) {
		s.stale.Add(1)
		return true, regressed, top
	}
	s.newest[r] = got
	return false, regressed, top
}

// write is a holding's write to the fenced store; a stale one accepted
// with Fencing on breaks the contract.
func (w *holder) write(r string, got time.Time, l redlock.Lock, zombie bool) {
	stale, regressed, top := w.store.write(r, got, got.Before(l.Until()), l.Token())
	if stale && w.cfg.Fencing {
		w.rec.Broke(StaleWrite, "holder %d: %q write with token %d (zombie %v) accepted after a newer holder's", w.id, r, l.Token(), zombie)
	}
	if regressed {
		w.rec.Broke(TokenRegression, "holder %d: %q granted after the holder of the highest token %d, with token %d not higher", w.id, r, top, l.Token())
	}
}

// writeAll is a holding's write to each resource it holds: r, or every
// resource of the set rs.
func (w *holder) writeAll(g *holding, zombie bool) {
	if zombie {
		w.s.zombies.Add(int64(max(len(g.rs), 1)))
	}
	if g.rs == nil {
		w.write(g.r, g.got, g.l, zombie)
		return
	}
	for _, x := range g.rs {
		w.write(x, g.got, g.l, zombie)
	}
}
