package redlock

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redmux/redmux/mux"
	"github.com/redmux/redmux/redlock/scripts"
	"github.com/redmux/redmux/resp"
)

// This file is the data set's own evidence (docs/OPERATIONS.md, rule 4)
// and the TTL record every client shares (rule 5): each acquisition's
// pipeline reads MGET marker young ttl after its lock command, a grant
// counts on a node only where the marker is the id this client accepted
// and the young key is gone, and what the MGET says otherwise is acted on
// off the grant's path (markerWork). judgeMarker (trust.go) decides.
//
// A node's data set is one marker; on a Redis Cluster node each shard's
// is, at its anchor slot (mux.Client.Anchor): the marker's keys carry
// the anchor's tag and the state is kept per anchor, its TTL record too:
// each shard holds its own, read in its MGET and re-seeded like a plain
// node's (the untagged record, on the shard that serves its slot, is
// where a cluster node's declaration goes).

// More causes of a QuarantineError (rule 4).
var (
	// ErrDataSetNew: the node's data set has no marker, or a young one:
	// it may have lost keys (a restart without persistence, FLUSHALL, a
	// full resync) less than the quarantine ago, or it is new to these
	// clients (their first use of the nodes).
	ErrDataSetNew = errors.New("redlock: node's data set is new")
	// ErrDataSetReplaced: the node's data-set marker changed to another
	// id, or is another node's too: its data set was replaced (a resync
	// from another server, a restore) at a time nothing says.
	ErrDataSetReplaced = errors.New("redlock: node's data set was replaced")
	// ErrDataSetFlushed: the node told this client's connection that its
	// data set was flushed or replaced (FLUSHALL, FLUSHDB, a full resync
	// from another server: CLIENT TRACKING's invalidation of every key,
	// where the node takes CLIENT TRACKING), which its marker may not show
	// (a resync from a former replica of its own carries the accepted one).
	ErrDataSetFlushed = errors.New("redlock: node's data set was flushed or replaced")
)

// markers is a Client's marker state (rules 4 and 5).
type markers struct {
	nodes []markerNode // standalone and Sentinel nodes
	// shards: a cluster node's state per anchor slot (nil for others)
	shards []*[mux.ClusterSlots]atomic.Pointer[markerNode]
	// young: per cluster node, the latest mono instant until which this
	// client knows one of its shards' data sets stays young (noteYoung):
	// no shard of that node counts before (Redis Cluster rule 6)
	young []atomic.Int64
	mget  []byte // MGET of the three untagged keys (standalone and Sentinel nodes)
	// declared is the largest TTL (ns) this client declared to a quorum
	// of the nodes (rule 5); declMu serialises declarations
	declared atomic.Int64
	declMu   sync.Mutex
}

// markerNode is what a Client knows of one data set's marker.
type markerNode struct {
	id atomic.Pointer[string] // the accepted id; nil: none yet
	// young: mono instant until which this client knows the data set's
	// young key lives (it made it, or read its PTTL); 0: not known
	young atomic.Int64
	// trustYoung: the accepted id is the one New found under
	// WithTrustNodesAtStart, trusted with its young key (this client's
	// view only: other clients still wait for it)
	trustYoung atomic.Bool
	// steady is the last MGET reply judged steady (markerCheck): the same
	// bytes, for the same accepted id and TTL record, are judged the same
	// without a parse (under concurrency one shared MGET reply is judged
	// for every acquisition it serves)
	steady atomic.Pointer[steadyFrame]
}

// steadyFrame is an MGET reply's bytes that markerCheck judged steady for
// the accepted id (the pointer it loaded) and the record want: immutable.
type steadyFrame struct {
	raw  []byte
	id   *string
	want int64
}

// markerSeen is what a scan keeps of one node's MGET for markerWork:
// copied out of the batch, which the attempt reuses.
type markerSeen struct {
	got     bool // the MGET's reply arrived
	present bool
	id      string
	young   bool
	record  int64 // ms; -1: absent or not a number
}

func (c *Client) setupMarkers() {
	c.mk.nodes = make([]markerNode, c.n)
	c.mk.shards = make([]*[mux.ClusterSlots]atomic.Pointer[markerNode], c.n)
	c.mk.young = make([]atomic.Int64, c.n)
	for i := 0; i < c.n; i++ {
		if c.m.IsCluster(i) {
			c.mk.shards[i] = new([mux.ClusterSlots]atomic.Pointer[markerNode])
		}
	}
	m, y, t := scripts.MarkerKeys("")
	c.mk.mget = resp.AppendCommand(nil, "MGET", m, y, t)
}

// markerState returns the state of node i's data set at anchor (a cluster
// node's shard; -1 for any other node).
func (c *Client) markerState(i, anchor int) *markerNode {
	sh := c.mk.shards[i]
	if sh == nil || anchor < 0 {
		return &c.mk.nodes[i]
	}
	p := &sh[anchor]
	if st := p.Load(); st != nil {
		return st
	}
	p.CompareAndSwap(nil, &markerNode{})
	return p.Load()
}

// tagOf is the marker keys' hash tag of anchor ("" for none).
func tagOf(anchor int) string {
	if anchor < 0 {
		return ""
	}
	return mux.SlotTag(anchor)
}

// prepMarkers sets, for each node, where an acquisition of resource reads
// its marker (w.anchor, w.mstate) and adds the MGET to b after the lock
// command: the untagged keys, or on a cluster node the keys tagged with
// the anchor of resource's shard, encoded into w.mcmd (no allocation once
// it has grown). The MGET is a shared command (mux.Batch.AddShared): the
// acquisitions one write carries to a connection share one, sent after
// all their lock commands, which is all rule 4 asks of it.
func (c *Client) prepMarkers(w *worker, b *mux.Batch, resource string) {
	if c.cluster < 0 {
		for i := 0; i < c.n; i++ {
			w.anchor[i], w.mstate[i] = -1, &c.mk.nodes[i]
		}
		b.BroadcastShared(c.mk.mget, mux.ExpectAggregate)
		return
	}
	w.slot = mux.KeySlot(resource)
	for i := 0; i < c.n; i++ {
		a := c.m.Anchor(i, resource)
		w.anchor[i], w.mstate[i] = a, c.markerState(i, a)
		if a < 0 {
			b.AddShared(i, c.mk.mget, mux.ExpectAggregate)
			continue
		}
		tag := mux.SlotTag(a)
		w.mcmd = resp.AppendArrayHeader(w.mcmd[:0], 4)
		w.mcmd = resp.AppendBulkString(w.mcmd, "MGET")
		w.mcmd = appendTagged(w.mcmd, scripts.MarkerKey, tag)
		w.mcmd = appendTagged(w.mcmd, scripts.YoungKey, tag)
		w.mcmd = appendTagged(w.mcmd, scripts.TTLKey, tag)
		b.AddShared(i, w.mcmd, mux.ExpectAggregate) // copied
	}
}

// appendTagged appends key{tag} as a bulk string.
func appendTagged(dst []byte, key, tag string) []byte {
	dst = append(dst, '$')
	dst = strconv.AppendInt(dst, int64(len(key)+len(tag)+2), 10)
	dst = append(dst, '\r', '\n')
	dst = append(dst, key...)
	dst = append(dst, '{')
	dst = append(dst, tag...)
	dst = append(dst, '}', '\r', '\n')
	return dst
}

// markerOK reports whether the MGET reply r says the data set of st is
// the one this client accepted and old enough: the marker is the accepted
// id and the young key is absent. It runs in the grant's Success predicate
// (mux's reader): no allocation, no lock.
func markerOK(st *markerNode, r resp.Reply) bool {
	ok, _ := markerCheck(st, r, -1)
	return ok
}

// markerCheck is markerOK, and whether the MGET needs no work off the
// grant's path (steady: the marker accepted, no young key, and, unless
// want < 0, the TTL record exactly want: one below is re-seeded, one
// above is learned). It runs in the grant's predicate, so that
// noteMarkers passes over the nodes it found steady without reading their
// replies again.
func markerCheck(st *markerNode, r resp.Reply, want int64) (ok, steady bool) {
	p := st.id.Load()
	if p == nil {
		return false, false
	}
	if want < 0 {
		return judgeMGET(st, p, r, want)
	}
	//mutant:memo-id-unchecked,memo-want-unchecked
	if f := st.steady.Load(); f != nil && f.id == p && f.want == want && bytes.Equal(f.raw, r.Raw) {
		st.youngGone()
		return true, true
	}
	ok, steady = judgeMGET(st, p, r, want)
	if steady {
		// a new steady reply (the first, or the record or marker moved):
		// copied once, then compared
		st.steady.Store(&steadyFrame{raw: bytes.Clone(r.Raw), id: p, want: want})
	}
	return ok, steady
}

// judgeMGET is markerCheck's reading of the reply r for the accepted id p.
func judgeMGET(st *markerNode, p *string, r resp.Reply, want int64) (ok, steady bool) {
	if r.Type != resp.TypeArray || r.Len() != 3 {
		return false, false
	}
	it := r.Iter()
	var a resp.Reply
	if !it.Next(&a) || a.Null || string(a.Data) != *p || !it.Next(&a) {
		return false, false
	}
	//mutant:young-ignored
	if !a.Null {
		return st.trustYoung.Load(), false
	}
	st.youngGone()
	if want < 0 {
		return true, true
	}
	if !it.Next(&a) {
		return true, false
	}
	v := readRecord(a)
	//mutant:record-not-learned
	return true, v == want || v > want && want >= maxTTLMillis
}

// noteYoung records that the data set of st (node i's, or one shard's of
// cluster node i) stays young until the mono instant until. On a cluster
// node it holds every shard back as long: a slot of the young shard may
// move to another with what the shard had, or had lost (Redis Cluster
// rule 6).
func (c *Client) noteYoung(i int, st *markerNode, until int64) {
	st.young.Store(until)
	if c.mk.shards[i] == nil {
		return
	}
	y := &c.mk.young[i]
	for {
		old := y.Load()
		if until <= old || y.CompareAndSwap(old, until) {
			return
		}
	}
}

// clusterYoung reports whether a shard of cluster node i is known to hold
// a young data set now (noteYoung): the node's grants do not count. One
// atomic load, and a clock read while one is.
func (c *Client) clusterYoung(i int) bool {
	y := c.mk.young[i].Load()
	//mutant:cluster-young-one-shard
	return y != 0 && mono() < y
}

// youngGone ends the node's young-key wait, if any: a reply without the
// young key says it is gone.
func (st *markerNode) youngGone() {
	if st.young.Load() != 0 {
		st.young.Store(0)
	}
}

// maxTTLMillis is maxTTL in milliseconds: a record above it is learned as
// maxTTL, and is steady once learned.
const maxTTLMillis = int64(maxTTL / time.Millisecond)

// readRecord parses the TTL record's bulk value (milliseconds), -1 when it
// is absent or not a whole number in range. No allocation.
func readRecord(a resp.Reply) int64 {
	if a.Null || len(a.Data) == 0 || len(a.Data) > 18 {
		return -1
	}
	var v int64
	for _, ch := range a.Data {
		if ch < '0' || ch > '9' {
			return -1
		}
		v = v*10 + int64(ch-'0')
	}
	return v
}

// noteRecordMS learns a TTL record read from a node (ms; rule 5).
func (c *Client) noteRecordMS(ms int64) {
	if ms > 0 {
		c.trust.noteRecord(min(time.Duration(ms)*time.Millisecond, maxTTL))
	}
}

// noteMarkers reads every node's MGET, command k of b (-1: the acquisition's, w.layout, as
// in an acquisition: what arrived before Do returned; w.mstate says whose
// data set each is),
// learns the TTL records, and reports whether some node needs work off
// the grant's path (markerWork), which it prepares in w.seen. The common
// case, every marker accepted, no young key and every record up to date,
// allocates nothing.
func (c *Client) noteMarkers(w *worker, b *mux.Batch, k int) bool {
	want := c.wantRecord()
	work := false
	now := int64(-1)
	for i := 0; i < c.n; i++ {
		w.seen[i].got = false
		if w.steady&(1<<i) != 0 {
			continue // its predicate found it steady
		}
		at := k
		if at < 0 {
			at = w.layout(i)
		}
		m, y, rec, ok := c.readMGET(b, i, at)
		if !ok {
			continue
		}
		st := w.mstate[i]
		p := st.id.Load()
		steady := !m.Null && p != nil && string(m.Data) == *p && rec >= want
		if y.Null {
			st.youngGone()
		}
		if steady && !y.Null && !st.trustYoung.Load() {
			if now < 0 {
				now = mono()
			}
			steady = st.young.Load() > now // its end is known
		}
		if steady {
			continue
		}
		work = true
		s := &w.seen[i]
		*s = markerSeen{got: true, present: !m.Null, young: !y.Null, record: rec}
		if s.present {
			s.id = string(m.Data) // cold path: a copy
		}
	}
	return work
}

// readMGET reads node i's marker MGET, command k of b: the marker, the
// young key and the TTL record (learned: rule 5), ok false when no
// three-key reply arrived. No allocation.
func (c *Client) readMGET(b *mux.Batch, i, k int) (m, y resp.Reply, rec int64, ok bool) {
	r, err := b.Reply(i, k)
	if err != nil || r.Type != resp.TypeArray || r.Len() != 3 {
		return m, y, -1, false
	}
	it := r.Iter()
	var t resp.Reply
	it.Next(&m)
	it.Next(&y)
	it.Next(&t)
	rec = readRecord(t) // a cluster shard's own record on a cluster node
	c.noteRecordMS(rec)
	return m, y, rec, true
}

// wantRecord is the TTL record (ms) every node should hold: the largest
// this client declared or read.
func (c *Client) wantRecord() int64 {
	return (max(c.mk.declared.Load(), c.trust.record.Load()) + int64(time.Millisecond) - 1) / int64(time.Millisecond)
}

// markerWork acts on what noteMarkers prepared for the acquisition of
// resource (rule 4's table): accepts ids, quarantines nodes whose marker
// changed, creates or replaces markers (after reading the TTL record from
// every node it reaches, so the young key lives the largest TTL in use),
// learns how long young keys live, and raises the TTL record where it is
// behind (rule 5). Cold path: it allocates and makes up to three round
// trips, each bounded by timeout.
func (c *Client) markerWork(ctx context.Context, w *worker, resource string, timeout time.Duration) {
	ctx = w.cleanup(ctx)
	defer func() { w.dctx.parent = nil }()
	seen := w.seen
	var inits, reseed, ask []int
	expect := make([]string, c.n)
	want := c.wantRecord()
	for i := range seen {
		s := &seen[i]
		if !s.got {
			continue
		}
		if s.record < want {
			reseed = append(reseed, i)
		}
		st := w.mstate[i]
		p := st.id.Load()
		acc := ""
		if p != nil {
			acc = *p
		}
		dup := s.present && c.duplicateID(w, i, s.id)
		id := s.id // stored apart: seen is the worker's, reused
		switch judgeMarker(acc, p != nil, markerObs{Present: s.present, ID: id}, dup) {
		case markAccept:
			st.id.Store(&id)
			st.trustYoung.Store(false)
		case markAcceptNew:
			st.id.Store(&id)
			st.trustYoung.Store(false)
			//mutant:copied-data-set-accepted
			st.young.Store(0)
			c.quarantineNow(i, ErrDataSetReplaced)
		case markInit:
			inits = append(inits, i)
		case markReinit:
			inits = append(inits, i)
			expect[i] = s.id
		}
		if s.young && s.present && st.young.Load() <= mono() {
			ask = append(ask, i)
		}
	}
	cb := w.coldBatch(c)
	if len(inits) > 0 {
		// the young key must outlive every key the node may have lost:
		// the largest TTL record of every node reached now (rule 5)
		c.readRecords(ctx, cb, timeout)
		c.initMarkers(ctx, w, cb, resource, inits, expect, false, timeout)
	}
	if len(reseed) > 0 {
		cb.Reset()
		cb.SetKey(resource) // a cluster node's anchor is on resource's shard
		ms := strconv.FormatInt(c.wantRecord(), 10)
		for _, i := range reseed {
			_, _, tk := scripts.MarkerKeys(tagOf(w.anchor[i]))
			cb.Add(i, raiseCmd(tk, ms))
		}
		_, _ = c.m.Do(ctx, cb, mux.Policy{Timeout: timeout})
	}
	if len(ask) > 0 {
		cb.Reset()
		cb.SetKey(resource) // a cluster node's anchor is on resource's shard
		for _, i := range ask {
			mk, yk, _ := scripts.MarkerKeys(tagOf(w.anchor[i]))
			cb.Add(i, resp.AppendCommand(nil, "PTTL", yk))
			cb.Add(i, resp.AppendCommand(nil, "GET", mk))
		}
		t0 := mono()
		_, _ = c.m.Do(ctx, cb, mux.Policy{Timeout: timeout})
		for _, i := range ask {
			r, err := cb.Reply(i, 0)
			id, err2 := cb.Reply(i, 1)
			st := w.mstate[i]
			p := st.id.Load()
			if v, ok := r.Int(); err == nil && err2 == nil && ok && v > 0 && p != nil && string(id.Data) == *p {
				// the young key of the id accepted lives at most v more
				c.noteYoung(i, st, t0+int64(v)*int64(time.Millisecond))
			}
		}
	}
	for i := range seen {
		seen[i] = markerSeen{}
	}
}

// readRecords reads the TTL records of every node that answers within
// timeout and learns them (rule 5: before a young key is made): the
// untagged record, and on a cluster node every shard's own, one batch per
// shard (routed by its anchor), all at once.
func (c *Client) readRecords(ctx context.Context, cb *mux.Batch, timeout time.Duration) {
	done := c.onShardRecords(ctx, timeout, func(tk string) []byte { return resp.AppendCommand(nil, "GET", tk) })
	cb.Reset()
	cb.SetKey(scripts.TTLKey)
	cb.Broadcast(resp.AppendCommand(nil, "GET", scripts.TTLKey))
	_, _ = c.m.Do(ctx, cb, mux.Policy{Timeout: timeout})
	for i := 0; i < c.n; i++ {
		if r, err := cb.Reply(i, 0); err == nil {
			c.noteRecordMS(readRecord(r))
		}
	}
	done()
}

// onShardRecords sends, to every shard of every cluster node, the command
// cmd(its TTL record's key), one batch per shard routed by its anchor,
// all at once (cold path: it allocates), and learns the records they
// answer: a bulk value (GET) or an integer (TTLRaise). done waits for
// them all (each bounded by timeout).
func (c *Client) onShardRecords(ctx context.Context, timeout time.Duration, cmd func(tk string) []byte) (done func()) {
	var wg sync.WaitGroup
	for i := 0; i < c.n; i++ {
		if !c.m.IsCluster(i) {
			continue
		}
		for _, a := range c.m.Anchors(i) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tag := tagOf(a)
				_, _, tk := scripts.MarkerKeys(tag)
				b := c.m.NewBatch()
				b.SetKey("{" + tag + "}")
				b.Add(i, cmd(tk))
				_, _ = c.m.Do(ctx, b, mux.Policy{Timeout: timeout})
				if r, err := b.Reply(i, 0); err == nil {
					if v, ok := r.Int(); ok {
						c.noteRecordMS(v)
					} else {
						c.noteRecordMS(readRecord(r))
					}
				}
			}()
		}
	}
	return wg.Wait
}

// raiseCmd is TTLRaise of the record at key tk to ms milliseconds.
func raiseCmd(tk, ms string) []byte {
	return resp.AppendCommand(nil, "EVALSHA", scripts.TTLRaise.SHA, "1", tk, ms)
}

// duplicateID reports whether id, node i's marker, is another node's
// accepted id or what another node's MGET showed in this scan: a data set
// copied from a sibling (rule 4).
func (c *Client) duplicateID(w *worker, i int, id string) bool {
	for j := 0; j < c.n; j++ {
		if j == i {
			continue
		}
		if p := c.mk.nodes[j].id.Load(); p != nil && *p == id {
			return true
		}
		if p := w.mstate[j].id.Load(); p != nil && *p == id {
			return true
		}
		if s := &w.seen[j]; s.got && s.present && s.id == id {
			return true
		}
	}
	return false
}

// initMarkers creates a marker on each node of nodes, at the anchors in
// w.anchor (expect[i]: the id it must still have, "" for none), with a
// fresh id and a young key for the quarantine period unless mature
// (WithTrustNodesAtStart in New). The batch is routed by route (the
// resource whose shards the anchors are). A node whose script set this
// client's id accepts it; one where another id was in place is judged at
// its next grant.
func (c *Client) initMarkers(ctx context.Context, w *worker, cb *mux.Batch, route string, nodes []int, expect []string, mature bool, timeout time.Duration) {
	if len(nodes) == 0 {
		return
	}
	period := c.trust.period(&c.def)
	young := "0"
	if !mature {
		young = strconv.FormatInt(ttlMillis(period), 10)
	}
	ids := make([]string, c.n)
	cb.Reset()
	cb.SetKey(route)
	for _, i := range nodes {
		var raw [16]byte
		_, _ = w.rng.Read(raw[:])
		ids[i] = hex.EncodeToString(raw[:])
		mk, yk, _ := scripts.MarkerKeys(tagOf(w.anchor[i]))
		cb.Add(i, resp.AppendCommand(nil, "EVALSHA", scripts.MarkerInit.SHA, "2", mk, yk, expect[i], ids[i], young))
	}
	t0 := mono()
	_, _ = c.m.Do(ctx, cb, mux.Policy{Timeout: timeout})
	for _, i := range nodes {
		r, err := cb.Reply(i, 0)
		if err != nil || string(r.Data) != ids[i] {
			continue
		}
		id := ids[i]
		st := w.mstate[i]
		st.id.Store(&id)
		st.trustYoung.Store(false)
		if mature {
			st.young.Store(0)
			continue
		}
		c.noteYoung(i, st, t0+int64(period))
		cause := ErrDataSetNew
		if expect[i] != "" {
			cause = ErrDataSetReplaced
		}
		c.report(i, cause, period, nil)
	}
}

// prime is New's first look at the nodes (bounded by startTimeout): it
// declares the client's default TTL (rule 5) and reads every data set's
// marker (each shard's on a cluster node), accepting what is in place
// (first sight) and creating what is missing (rule 4), so that the first
// acquisition counts every node it reaches. Under WithTrustNodesAtStart
// the markers it creates have no young key (nodes that hold no lock). A
// node it does not reach is met at a later acquisition.
func (c *Client) prime(trustAtStart bool) {
	w := c.getWorker()
	defer c.putWorker(w)
	timeout := max(c.def.nodeTimeout, startTimeout)
	ctx := context.Background()
	cb := w.coldBatch(c)
	cb.Reset()
	cb.SetKey(scripts.TTLKey)
	ms := strconv.FormatInt(ttlMillis(c.def.ttl), 10)
	shards := c.onShardRecords(ctx, timeout, func(tk string) []byte { return raiseCmd(tk, ms) })
	cb.BroadcastExpect(raiseCmd(scripts.TTLKey, ms), mux.ExpectInt)
	if c.cluster < 0 {
		cb.BroadcastExpect(c.mk.mget, mux.ExpectAggregate)
	}
	_, _ = c.m.Do(ctx, cb, mux.Policy{Timeout: timeout})
	raised := 0
	for i := 0; i < c.n; i++ {
		if r, err := cb.Reply(i, 0); err == nil {
			if v, ok := r.Int(); ok {
				raised++
				c.noteRecordMS(v)
			}
		}
	}
	shards()
	if raised >= c.quorum {
		c.mk.declared.Store(int64(c.def.ttl))
	}
	if c.cluster < 0 {
		for i := 0; i < c.n; i++ {
			w.anchor[i], w.mstate[i] = -1, &c.mk.nodes[i]
		}
		c.primeMarkers(ctx, w, cb, "", trustAtStart, timeout)
		return
	}
	// a cluster node's every shard, one batch per anchor and node
	for i := 0; i < c.n; i++ {
		anchors := []int{-1}
		if c.m.IsCluster(i) {
			anchors = c.m.Anchors(i)
		}
		for _, a := range anchors {
			tag := tagOf(a)
			route := "{" + tag + "}"
			for j := 0; j < c.n; j++ {
				w.anchor[j], w.mstate[j] = -1, &c.mk.nodes[j]
			}
			w.anchor[i], w.mstate[i] = a, c.markerState(i, a)
			cb.Reset()
			cb.SetKey(route)
			mk, yk, tk := scripts.MarkerKeys(tag)
			cb.Add(i, resp.AppendCommand(nil, "MGET", mk, yk, tk))
			_, _ = c.m.Do(ctx, cb, mux.Policy{Timeout: timeout})
			c.primeMarkers(ctx, w, cb, route, trustAtStart, timeout)
		}
	}
}

// primeMarkers is prime's judgement of the MGETs in cb (the last command
// of each node), routed by route.
func (c *Client) primeMarkers(ctx context.Context, w *worker, cb *mux.Batch, route string, trustAtStart bool, timeout time.Duration) {
	for i := 0; i < c.n; i++ {
		w.seen[i] = markerSeen{}
	}
	work := false
	for i := 0; i < c.n; i++ { // each node's MGET is its last command

		if cb.Commands(i) == 0 {
			continue
		}
		m, y, rec, ok := c.readMGET(cb, i, cb.Commands(i)-1)
		if !ok {
			continue
		}
		w.seen[i] = markerSeen{got: true, present: !m.Null, young: !y.Null, record: rec}
		if !m.Null {
			w.seen[i].id = string(m.Data)
		}
		work = true
	}
	if !work {
		return
	}
	if !trustAtStart {
		c.markerWork(ctx, w, route, timeout)
		return
	}
	var absent []int
	for i := range w.seen {
		s := &w.seen[i]
		switch {
		case !s.got:
		case !s.present:
			absent = append(absent, i)
			s.got = false // done here
		case c.duplicateID(w, i, s.id):
			// left to markerWork: a copied data set is replaced
		default:
			id := s.id
			w.mstate[i].id.Store(&id)             // first sight, trusted as it is,
			w.mstate[i].trustYoung.Store(s.young) // its young key too (for this client)
			s.got = false
		}
	}
	c.initMarkers(ctx, w, w.coldBatch(c), route, absent, make([]string, c.n), true, timeout)
	c.markerWork(ctx, w, route, timeout) // duplicates, young keys, records behind
}

// quarantineNow quarantines node i for the period from now (a marker that
// changed: rule 4) and reports it.
func (c *Client) quarantineNow(i int, cause error) {
	ts := &c.trust
	ts.mu.Lock()
	t := &ts.nodes[i]
	left := c.quarantineFrom(t, mono())
	t.cause = cause
	ts.mu.Unlock()
	c.report(i, cause, left, nil)
}

// markerErr is the QuarantineError of node i whose marker (state st) is
// why its grant did not count (failure paths only: it allocates).
func (c *Client) markerErr(i int, st *markerNode) error {
	left := time.Duration(st.young.Load() - mono())
	if left < 0 {
		left = time.Nanosecond // young, for a time this client does not know yet
	}
	return &QuarantineError{Node: i, Addr: c.addrs[i], Cause: ErrDataSetNew, Left: left}
}

// youngLeft is the longest time this client knows one of node i's data
// sets stays young (Quarantined).
func (c *Client) youngLeft(i int, now int64) time.Duration {
	left := time.Duration(c.mk.nodes[i].young.Load() - now)
	if sh := c.mk.shards[i]; sh != nil {
		for a := range sh {
			if st := sh[a].Load(); st != nil {
				left = max(left, time.Duration(st.young.Load()-now))
			}
		}
	}
	return left
}

// declare makes sure ttl is declared on a quorum of the nodes before a
// grant or an extension uses it (rule 5): TTLRaise on every node, waiting
// for a quorum; the records they return are learned. It is an atomic load
// when ttl was declared before. On failure it returns false with every
// node's answer in w.nodes.
func (c *Client) declare(ctx context.Context, w *worker, ttl time.Duration, timeout time.Duration) bool {
	if int64(ttl) <= c.mk.declared.Load() {
		return true
	}
	c.mk.declMu.Lock()
	defer c.mk.declMu.Unlock()
	if int64(ttl) <= c.mk.declared.Load() {
		return true
	}
	ms := strconv.FormatInt(ttlMillis(ttl), 10)
	// every cluster shard's own record too (best effort: the untagged one
	// is the declaration), so that a shard's wipe leaves it on the others
	defer c.onShardRecords(ctx, timeout, func(tk string) []byte { return raiseCmd(tk, ms) })()
	cb := w.coldBatch(c)
	cb.Reset()
	cb.SetKey(scripts.TTLKey)
	cb.BroadcastExpect(raiseCmd(scripts.TTLKey, ms), mux.ExpectInt)
	out, err := c.m.Do(ctx, cb, mux.Policy{Quorum: c.quorum, Success: isInt, Timeout: timeout})
	for i := 0; i < c.n; i++ {
		if r, err := cb.Reply(i, 0); err == nil {
			if v, ok := r.Int(); ok {
				c.noteRecordMS(v)
			}
		}
	}
	if err != nil || out.Successes < c.quorum {
		for i := 0; i < c.n; i++ {
			e := cb.Err(i)
			if e == nil {
				e = errNotDeclared
			}
			w.nodes[i] = nodeRec{status: NodeFailed, err: closedErr(e)}
		}
		return false
	}
	for {
		old := c.mk.declared.Load()
		if int64(ttl) <= old || c.mk.declared.CompareAndSwap(old, int64(ttl)) {
			return true
		}
	}
}

// errNotDeclared is a node's answer in a failed TTL declaration where it
// raised the record, but fewer than a quorum did.
var errNotDeclared = errors.New("TTL record raised on this node, but not on a quorum: the TTL is not declared (docs/OPERATIONS.md, rule 5)")

// coldBatch is the worker's batch for the marker's cold work, made on
// first use.
func (w *worker) coldBatch(c *Client) *mux.Batch {
	if w.cb == nil {
		w.cb = c.m.NewBatch()
	}
	return w.cb
}
