package mux

// slot is one expected reply on a connection, in send order.
type slot struct {
	grp *sharedGroup // a shared command's (shared.go): b is nil, the group says whose it is
	b   *Batch
	gen uint64 // b's call generation when queued: a mismatch means abandoned
	k   int32  // the command's index in b for this node; -1: internal (SCRIPT LOAD)
	exp Expect // the reply kinds the command accepts (0: any)
	at  int64  // mono deadline of the batch that queued it; HardTimeout counts from there
}

// slotRing is a growable FIFO of slots.
type slotRing struct {
	s    []slot
	h, n int
}

func (q *slotRing) push(s slot) {
	if q.n == len(q.s) {
		ns := make([]slot, max(16, 2*len(q.s)))
		for i := 0; i < q.n; i++ {
			ns[i] = q.s[(q.h+i)%len(q.s)]
		}
		q.s, q.h = ns, 0
	}
	q.s[(q.h+q.n)%len(q.s)] = s
	q.n++
}

func (q *slotRing) pop() slot {
	s := q.s[q.h]
	q.s[q.h] = slot{}
	q.h = (q.h + 1) % len(q.s)
	q.n--
	return s
}

func (q *slotRing) front() *slot { return &q.s[q.h] }

// at returns the i-th slot from the front (i < n).
func (q *slotRing) at(i int) *slot { return &q.s[(q.h+i)%len(q.s)] }
