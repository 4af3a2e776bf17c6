package checker

import (
	"sync"

	"github.com/redmux/redmux/redlock"
)

// endCounter is a checker client's observer: it counts, per lock (Event.LockID),
// the keep-alive ends it is told of (OpKeepAliveEnd) and the lost ones;
// the holders note the keep-alives they started and those they saw end by
// themselves (started, ended).
type endCounter struct {
	mu    sync.Mutex
	ends  map[uint64]int  // OpKeepAliveEnd events per lock
	lost  map[uint64]bool // one of them said Lost
	kept  map[uint64]bool // keep-alives started
	self  map[uint64]bool // ended by themselves (true: lost or expired)
	nEnds int64
	nLost int64
	incs  []incEvent // OpIncarnation events, for timelines (timeline.go)
}

func newEndCounter() *endCounter {
	return &endCounter{ends: map[uint64]int{}, lost: map[uint64]bool{}, kept: map[uint64]bool{}, self: map[uint64]bool{}}
}

func (o *endCounter) Observe(e redlock.Event) {
	if e.Op == redlock.OpIncarnation {
		o.noteInc(e)
		return
	}
	if e.Op != redlock.OpKeepAliveEnd {
		return
	}
	o.mu.Lock()
	o.ends[e.LockID]++
	o.nEnds++
	if e.Lost() {
		o.lost[e.LockID] = true
		o.nLost++
	}
	o.mu.Unlock()
}

// started notes a keep-alive of the lock id begun by a holder.
func (o *endCounter) started(id uint64) {
	o.mu.Lock()
	o.kept[id] = true
	o.mu.Unlock()
}

// ended notes a keep-alive the holder saw end by itself (lost: lost or
// expired).
func (o *endCounter) ended(id uint64, lost bool) {
	o.mu.Lock()
	o.self[id] = lost
	o.mu.Unlock()
}

// checkEnds compares, per lock and once the clients are closed (every end
// is reported by then), the keep-alive ends each client's observer was
// told of with what the holders saw: every lock's end reported at most
// once, and only for a lock kept alive; a keep-alive that ended by itself
// reported, as lost when the holder saw it lost or expired. It returns
// the ends and lost ends reported in all.
func checkEnds(obs []*endCounter, rec *Recorder) (ends, lost int64) {
	for ci, o := range obs {
		o.mu.Lock()
		for id, n := range o.ends {
			switch {
			case !o.kept[id]:
				rec.Broke(KeepAliveEndReport, "client %d: %d keep-alive end(s) reported for lock %#x, never kept alive", ci, n, id)
			case n > 1:
				rec.Broke(KeepAliveEndReport, "client %d: lock %#x's keep-alive end reported %d times", ci, id, n)
			}
		}
		for id, wasLost := range o.self {
			switch {
			case o.ends[id] == 0:
				rec.Broke(KeepAliveEndReport, "client %d: lock %#x's keep-alive ended by itself (lost or expired: %v), not reported", ci, id, wasLost)
			case wasLost && !o.lost[id]:
				rec.Broke(KeepAliveEndReport, "client %d: lock %#x's keep-alive ended lost or expired, reported not lost", ci, id)
			}
		}
		ends, lost = ends+o.nEnds, lost+o.nLost
		o.mu.Unlock()
	}
	return ends, lost
}
