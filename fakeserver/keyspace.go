package fakeserver

import "time"

const numDBs = 16

// Value kinds. The zero kind is a string, so an entry built with only val
// set is a string.
const (
	kindString uint8 = iota
	kindHash
	kindList
	kindZset
)

// entry is one value. exp is the absolute expiry time on the node's clock
// in unix milliseconds (Redis's resolution), 0 for none. A key is expired
// once the clock is past exp, as in Redis.
type entry struct {
	val  []byte // string value
	exp  int64
	at   int64 // when last stored (put): monotonic ns since the node's base (Failover's lag)
	kind uint8
	hash *hashVal // kindHash
	list *listVal // kindList
	zset *zsetVal // kindZset
}

// hashVal is a hash that keeps its fields in insertion order, as Redis's
// small (listpack-encoded) hashes do, so HGETALL replies compare byte for
// byte with a real server.
type hashVal struct {
	names []string
	vals  [][]byte
	index map[string]int
}

func newHash() *hashVal { return &hashVal{index: map[string]int{}} }

func (h *hashVal) get(f string) ([]byte, bool) {
	i, ok := h.index[f]
	if !ok {
		return nil, false
	}
	return h.vals[i], true
}

// set stores a copy of v; it reports whether f is a new field.
func (h *hashVal) set(f string, v []byte) bool {
	v = append([]byte(nil), v...)
	if i, ok := h.index[f]; ok {
		h.vals[i] = v
		return false
	}
	h.index[f] = len(h.names)
	h.names = append(h.names, f)
	h.vals = append(h.vals, v)
	return true
}

func (h *hashVal) del(f string) bool {
	i, ok := h.index[f]
	if !ok {
		return false
	}
	delete(h.index, f)
	h.names = append(h.names[:i], h.names[i+1:]...)
	h.vals = append(h.vals[:i], h.vals[i+1:]...)
	for j := i; j < len(h.names); j++ {
		h.index[h.names[j]] = j
	}
	return true
}

func (h *hashVal) len() int { return len(h.names) }

// listVal is a deque: the list is front reversed, then back, so pushes
// and pops at either end are O(1) (redis-benchmark's LPUSH test pushes
// 100,000 elements onto one list).
type listVal struct {
	front [][]byte // head is front[len(front)-1]
	back  [][]byte
}

func (l *listVal) len() int { return len(l.front) + len(l.back) }

func (l *listVal) at(i int) []byte {
	if i < len(l.front) {
		return l.front[len(l.front)-1-i]
	}
	return l.back[i-len(l.front)]
}

func (l *listVal) pushLeft(v []byte)  { l.front = append(l.front, v) }
func (l *listVal) pushRight(v []byte) { l.back = append(l.back, v) }

func (l *listVal) popLeft() []byte {
	if k := len(l.front); k > 0 {
		v := l.front[k-1]
		l.front[k-1] = nil
		l.front = l.front[:k-1]
		return v
	}
	v := l.back[0]
	l.back[0] = nil
	l.back = l.back[1:]
	return v
}

func (l *listVal) popRight() []byte {
	if k := len(l.back); k > 0 {
		v := l.back[k-1]
		l.back[k-1] = nil
		l.back = l.back[:k-1]
		return v
	}
	v := l.front[0]
	l.front[0] = nil
	l.front = l.front[1:]
	return v
}

func (e entry) typeName() string {
	switch e.kind {
	case kindHash:
		return "hash"
	case kindList:
		return "list"
	case kindZset:
		return "zset"
	}
	return "string"
}

// nowLocked is the node clock in unix nanoseconds: real (monotonic) time
// plus the configured offset and drift. Callers hold n.mu.
func (n *Node) nowLocked() int64 {
	m := int64(time.Since(n.base))
	now := n.base.UnixNano() + m + n.clockOff
	if n.drift != 0 {
		now += int64(n.drift * float64(m-n.driftAt))
	}
	return now
}

// lookup returns the live entry for key, deleting it if it has expired
// (lazy expiry). Callers hold n.mu.
func (n *Node) lookup(db int, key string, now int64) (entry, bool) {
	e, ok := n.dbs[db][key]
	if !ok {
		return entry{}, false
	}
	if e.exp != 0 && e.exp < now/1e6 {
		delete(n.dbs[db], key)
		n.stats.expired.Add(1)
		return entry{}, false
	}
	return e, true
}

// put stores e under key and marks the key modified for WATCH. Callers
// hold n.mu.
func (n *Node) put(db int, key string, e entry) {
	e.at = int64(time.Since(n.base))
	n.dbs[db][key] = e
	n.touch(db, key)
}

// remove deletes key and marks it modified for WATCH. Callers hold n.mu.
func (n *Node) remove(db int, key string) {
	delete(n.dbs[db], key)
	n.touch(db, key)
}

// watchKey names a key watched by some connection.
type watchKey struct {
	db  int
	key string
}

// touch bumps the version of a watched key. Callers hold n.mu.
func (n *Node) touch(db int, key string) {
	if len(n.watched) == 0 {
		return
	}
	if w, ok := n.watched[watchKey{db, key}]; ok {
		w.ver++
	}
}

// touchDB bumps every watched key of db, or of every database when db < 0
// (data loss: a restart losing data, a failover). Callers hold n.mu.
func (n *Node) touchDB(db int) {
	for k, w := range n.watched {
		if db < 0 || k.db == db {
			w.ver++
		}
	}
}

// touchFlushed bumps the watched keys of db (every database when db < 0)
// that exist there, before FLUSHDB/FLUSHALL empties it: as Redis's
// touchAllWatchedKeysInDb, a watched key the flush does not remove (it did
// not exist) does not fail its transaction. A key expired but not yet
// removed still exists, as in Redis's dictionary. It also tells every
// tracking connection, as Redis's signalFlushedDb does (flushPush).
// Callers hold n.mu.
func (n *Node) touchFlushed(db int) {
	n.flushGen.Add(1)
	for k, w := range n.watched {
		if db >= 0 && k.db != db {
			continue
		}
		if _, ok := n.dbs[k.db][k.key]; ok {
			w.ver++
		}
	}
}

func (n *Node) dbsizeLocked(db int) int {
	now := n.nowLocked()
	c := 0
	for _, e := range n.dbs[db] {
		if e.exp == 0 || e.exp >= now/1e6 {
			c++
		}
	}
	return c
}

// sweepBudget bounds the work of one active expiry pass per database; Go's
// randomised map iteration makes successive passes sample different keys.
const sweepBudget = 2000

func (n *Node) sweeper() {
	t := time.NewTicker(n.cfg.SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-n.closeCh:
			return
		case <-t.C:
		}
		n.mu.Lock()
		now := n.nowLocked()
		for db := range n.dbs {
			seen := 0
			for k, e := range n.dbs[db] {
				if e.exp != 0 && e.exp < now/1e6 {
					delete(n.dbs[db], k)
					n.stats.expired.Add(1)
				}
				seen++
				if seen >= sweepBudget {
					break
				}
			}
		}
		n.mu.Unlock()
	}
}
