//go:build linux

package mux

import "sync/atomic"

// readySet is how a tokenDriver learns what is ready, and its only
// waiting. Every method but flush and close is called by the token holder
// only; each handles what became ready (the connections' readable and
// writable) before it returns, and returns an error only when the set
// itself broke.
type readySet interface {
	// poke handles what is ready now, without waiting.
	poke() error
	// waitFor blocks the thread in the kernel for at most d ns (d > 0),
	// until something is ready; need is how many more connections must
	// answer before the leader's call can settle (a set may wait for
	// that many at once).
	waitFor(d int64, need int) error
	// park waits in the Go runtime's netpoller until something is ready
	// or deadline (mono ns) passes.
	park(deadline int64) error
	// flush hands the kernel what links queued but did not submit (none
	// for epoll: its links write at once); any goroutine may call it.
	flush()
	// dial dials a connection to node and makes its link.
	dial(node, shard int) (link, error)
	// close releases the set (the token holder is gone).
	close()
	// arrived calls note with the index of every connection that has
	// bytes no read turn has begun to take (epoll: its socket is
	// readable; io_uring: a receive's completion with data waits in the
	// ring), without reading them. Called by a goroutine that does not
	// hold the token (enter), under the driver's look mutex.
	arrived(note func(idx int)) error
	// marks returns the read marks that cover cn: begun counts the read
	// turns begun, ended those finished; a turn takes what had arrived
	// when it began. Any goroutine.
	marks(cn *pconn) (begun, ended uint32)
}

// marksOf loads a pair of read marks, ended first: a pair read that way
// with begun == ended says that no turn was in progress at the second
// load and every turn begun before it had ended (begun read first could
// pair a turn's end with the next turn's start, taken in between, and
// show an idle connection while a turn holds bytes it has not judged).
func marksOf(begun, ended *atomic.Uint32) (b, e uint32) {
	e = ended.Load()
	return begun.Load(), e
}

// wakeTag marks the eventfd's events.
const wakeTag = -1
