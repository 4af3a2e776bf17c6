package fakeserver

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redmux/redmux/redlock/scripts"
)

// ChaosProfile says which faults a Chaos injects. Durations of timed
// faults are U[MinFault, MaxFault).
type ChaosProfile struct {
	// Within Redlock's assumptions (safety must hold):
	ReplyDelay     bool // command run at once, reply U[0.2ms, MaxDelay) late; on any number of nodes
	RequestDelay   bool // command run U[0.2ms, MaxDelay) late; on any number of nodes
	Partitions     bool // requests dropped, or replies dropped (commands applied)
	DownUp         bool // node down (connections refused and dropped, data kept)
	Blackhole      bool // requests held, run when it heals
	RestartKeep    bool // restart keeping data, away 0-MaxFault
	RestartDelayed bool // restart LOSING data, away longer than any key can live (the delayed restart)
	// ClockRate: each node's clock runs at a rate in [-ClockRate,
	// +ClockRate] (redrawn every step period), and ClockStep: it steps by
	// up to ±ClockStep at random times at least MaxTTL apart. Over any
	// window of one TTL a node then gains at most ClockStep +
	// ClockRate*TTL; a lock's drift allowance (TTL*factor + fixed) covers
	// that while ClockRate <= factor and ClockStep <= fixed.
	ClockRate float64
	ClockStep time.Duration

	MaxTTL      time.Duration // the largest TTL in use; default 1s
	MaxDelay    time.Duration // default MaxTTL/3
	MinFault    time.Duration // default 10ms
	MaxFault    time.Duration // default 60ms
	MaxImpaired int           // nodes down, blackholed, partitioned or restarting at once; default a minority
	Every       time.Duration // mean time between new faults; default DefaultChaosEvery

	// Outside the operator's assumptions (the Redis page's), within the
	// client's when it quarantines new incarnations (redlock,
	// docs/OPERATIONS.md); a checker without the quarantine finds the
	// violations they cause:
	RestartNoDelay bool // restart losing data, back at once
	// Failover: the node fails over to a replica that lagged U[0,
	// FailoverLag) (default MaxTTL/4): the writes of that window are lost,
	// the node is back at once as a promoted replica (Node.Failover).
	Failover    bool
	FailoverLag time.Duration
	// Rolling: besides the drawn faults, the nodes restart one after
	// another, in order, losing data and back at once, one every
	// RollingEvery (default 3*MaxTTL): a rolling upgrade without the delay.
	Rolling      bool
	RollingEvery time.Duration
	// Data-set faults (docs/OPERATIONS.md, rule 4) a client learns of
	// only from the data set itself, since no connection is set up again:
	// Wipes empties a node's data set keeping its connections (FLUSHALL,
	// Node.Flush); Resyncs replaces it with a copy of another node's, an
	// empty one (a full resync, Node.Resync) or an older copy of its own
	// (a former replica's, its writes of the last U[0, MaxTTL) lost, its
	// marker kept: Node.ResyncLag), a third each; InfoRefused makes a node
	// refuse INFO for U[MinFault, MaxFault) and restart losing its data,
	// back at once, in the middle of it. RestartLag restarts a node from
	// an older snapshot of its own (Node.RestartLag): the writes of the
	// last U[0, FailoverLag) are lost, older keys (its marker) kept, so
	// only the new run_id and the uptime tell (rule 2).
	Wipes, Resyncs, InfoRefused, RestartLag bool

	// Migrations: on the nodes of sharded clusters (StartShardedCluster),
	// the slot of a key a node holds (or of a random slot it serves)
	// moves, keys and all, to another shard of its cluster (MoveSlot):
	// a resharding; clients meet MOVED. A slot moves at most once in
	// MaxTTL: each move costs a key up to 1 ms of its life (the remaining
	// TTL travels in whole milliseconds, as MIGRATE's does), and a lock
	// budgets one move (redlock's clusterMoveDrift).
	Migrations bool
	// WipeMoves: on the nodes of sharded clusters, a shard's data set is
	// emptied (Flush) and at once the slot of a lock key it held moves to
	// another shard of its cluster (MoveSlot, under the same one-move-per-
	// MaxTTL bound): the key's loss travels with its slot to a shard whose
	// data set, marker and all, is old (docs/OPERATIONS.md, Redis Cluster
	// rule 6). Half the time the same slot is wiped and moved on another
	// cluster as well: the key lost on two Redlock nodes at once. It
	// impairs the shard as a wipe does.
	WipeMoves bool

	// Outside every assumption:
	FastClocks float64 // nodes 0..N/2 (a majority) run fast at this rate
}

// DefaultChaosEvery is ChaosProfile.Every's default: the mean time
// between new faults the 5-node safety runs meet.
const DefaultChaosEvery = 20 * time.Millisecond

// ChaosCounts counts injected faults by kind.
type ChaosCounts struct {
	ReplyDelay, RequestDelay, PartitionRequests, PartitionReplies, Down, Blackhole,
	RestartKeep, RestartDelayed, RestartNoDelay, ClockSteps, Failovers, Rolling, Migrations atomic.Int64
	Wipes, Resyncs, InfoRefused, RestartLag, WipeMoves atomic.Int64
	ResyncsOwn                                         atomic.Int64 // of Resyncs, from an older copy of its own
}

func (c *ChaosCounts) String() string {
	return fmt.Sprintf("faults: %d reply delays, %d request delays, %d request partitions, %d reply partitions, %d down/up, %d blackholes, %d restarts keeping data, %d delayed restarts losing data, %d immediate restarts losing data, %d restarts from an older snapshot, %d failovers, %d rolling restarts, %d wipes, %d resyncs (%d from an older copy of its own), %d INFO refusals with a restart, %d clock steps, %d slot migrations, %d wipes then slot moves",
		c.ReplyDelay.Load(), c.RequestDelay.Load(), c.PartitionRequests.Load(), c.PartitionReplies.Load(), c.Down.Load(), c.Blackhole.Load(),
		c.RestartKeep.Load(), c.RestartDelayed.Load(), c.RestartNoDelay.Load(), c.RestartLag.Load(), c.Failovers.Load(), c.Rolling.Load(),
		c.Wipes.Load(), c.Resyncs.Load(), c.ResyncsOwn.Load(), c.InfoRefused.Load(), c.ClockSteps.Load(), c.Migrations.Load(), c.WipeMoves.Load())
}

// Chaos injects a profile's faults into a cluster. Its Inject method fits
// redlock's safety checker (which takes any injector; it does not import
// this package).
type Chaos struct {
	cl     *Cluster
	p      ChaosProfile
	Counts ChaosCounts

	logMu sync.Mutex
	log   []ChaosEvent // chaos_log.go
}

// NewChaos returns an injector of p's faults into cl, with p's defaults
// filled in.
func NewChaos(cl *Cluster, p ChaosProfile) *Chaos {
	if p.MaxTTL <= 0 {
		p.MaxTTL = time.Second
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = p.MaxTTL / 3
	}
	if p.MinFault <= 0 {
		p.MinFault = 10 * time.Millisecond
	}
	if p.MaxFault <= p.MinFault {
		p.MaxFault = p.MinFault + 50*time.Millisecond
	}
	if p.MaxImpaired <= 0 {
		p.MaxImpaired = (len(cl.Nodes) - 1) / 2
	}
	if p.Every <= 0 {
		p.Every = DefaultChaosEvery
	}
	if p.FailoverLag <= 0 {
		p.FailoverLag = p.MaxTTL / 4
	}
	if p.RollingEvery <= 0 {
		p.RollingEvery = 3 * p.MaxTTL
	}
	return &Chaos{cl: cl, p: p}
}

// KeyValues returns key's value in database 0 on every node (nil where
// absent) and its remaining time to live (-2ns where absent, -1ns without
// expiry).
func (ch *Chaos) KeyValues(key string) ([][]byte, []time.Duration) {
	vals := make([][]byte, len(ch.cl.Nodes))
	ttls := make([]time.Duration, len(ch.cl.Nodes))
	for i, n := range ch.cl.Nodes {
		ttls[i] = n.PTTL(key)
		if v, ok := n.Get(key); ok {
			vals[i] = v
		}
	}
	return vals, ttls
}

// span draws a duration from [lo, hi).
func span(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(rng.Int64N(int64(hi-lo)))
}

// Inject adds faults until ctx is done, then waits for the faults in
// progress, heals every node, brings it up and resets its clock.
func (ch *Chaos) Inject(ctx context.Context, rng *rand.Rand) {
	p, nodes := ch.p, ch.cl.Nodes
	var wg sync.WaitGroup
	defer func() {
		wg.Wait()
		for _, n := range nodes {
			n.ClearFaults()
			n.Up()
		}
	}()
	if p.FastClocks > 0 {
		for i := 0; i <= len(nodes)/2; i++ {
			nodes[i].SetClock(0, p.FastClocks)
		}
	}
	if p.ClockRate > 0 || p.ClockStep > 0 {
		for _, n := range nodes {
			seed := rng.Uint64()
			wg.Add(1)
			go func() {
				defer wg.Done()
				ch.clock(ctx, n, rand.New(rand.NewPCG(seed, 2)))
			}()
		}
	}
	var mu sync.Mutex
	busy := make([]bool, len(nodes))
	impaired := 0
	if p.Rolling {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; sleepCtx(ctx, p.RollingEvery); k++ {
				i := k % len(nodes)
				mu.Lock()
				if busy[i] || impaired >= p.MaxImpaired {
					mu.Unlock()
					continue // the node's turn passes
				}
				busy[i] = true
				impaired++
				mu.Unlock()
				ch.Counts.Rolling.Add(1)
				ch.note(nodes[i], "rolling restart (losing data, back at once)")
				_ = nodes[i].Restart(true, 0)
				mu.Lock()
				busy[i] = false
				impaired--
				mu.Unlock()
			}
		}()
	}
	actions := ch.actions(ctx)
	if len(actions) == 0 {
		<-ctx.Done()
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(span(rng, p.Every/2, p.Every*3/2)):
		}
		act := actions[rng.IntN(len(actions))]
		i := rng.IntN(len(nodes))
		d := span(rng, p.MinFault, p.MaxFault)
		mu.Lock()
		if busy[i] || (act.impairs && impaired >= p.MaxImpaired) {
			mu.Unlock()
			continue
		}
		busy[i] = true
		if act.impairs {
			impaired++
		}
		mu.Unlock()
		seed := rng.Uint64()
		wg.Add(1)
		go func() {
			defer wg.Done()
			act.run(nodes[i], d, rand.New(rand.NewPCG(seed, 1)))
			mu.Lock()
			busy[i] = false
			if act.impairs {
				impaired--
			}
			mu.Unlock()
		}()
	}
}

// chaosAction is one kind of fault Inject draws: run applies it to n for
// about d. Delays touch only time, never availability or data, so any
// number of nodes may be slow at once; the faults that impair a node are
// limited to MaxImpaired at a time.
type chaosAction struct {
	impairs bool
	run     func(n *Node, d time.Duration, rng *rand.Rand)
}

// actions lists the faults the profile enables; each ends early when ctx
// is done.
func (ch *Chaos) actions(ctx context.Context) []chaosAction {
	p, cnt := ch.p, &ch.Counts
	var actions []chaosAction
	if p.ReplyDelay {
		actions = append(actions, chaosAction{false, func(n *Node, d time.Duration, rng *rand.Rand) {
			cnt.ReplyDelay.Add(1)
			dl := span(rng, 200*time.Microsecond, p.MaxDelay)
			ch.note(n, "replies delayed %v for %v", dl, d)
			n.SetReplyDelay(dl, p.MaxDelay/10)
			sleepCtx(ctx, d)
			n.SetReplyDelay(0, 0)
		}})
	}
	if p.RequestDelay {
		actions = append(actions, chaosAction{false, func(n *Node, d time.Duration, rng *rand.Rand) {
			cnt.RequestDelay.Add(1)
			dl := span(rng, 200*time.Microsecond, p.MaxDelay)
			ch.note(n, "requests delayed %v for %v", dl, d)
			n.SetRequestDelay(dl, p.MaxDelay/10)
			sleepCtx(ctx, d)
			n.SetRequestDelay(0, 0)
		}})
	}
	if p.Partitions {
		actions = append(actions, chaosAction{true, func(n *Node, d time.Duration, rng *rand.Rand) {
			dir := Requests
			if rng.IntN(2) == 0 {
				dir = Replies
				cnt.PartitionReplies.Add(1)
			} else {
				cnt.PartitionRequests.Add(1)
			}
			ch.note(n, "partition (%v) for %v", dir, d)
			gen := n.partition(dir)
			sleepCtx(ctx, d)
			n.endPartition(gen)
		}})
	}
	if p.DownUp {
		actions = append(actions, chaosAction{true, func(n *Node, d time.Duration, _ *rand.Rand) {
			cnt.Down.Add(1)
			ch.note(n, "down for %v", d)
			gen := n.down()
			sleepCtx(ctx, d)
			_, _ = n.upIf(gen)
		}})
	}
	if p.Blackhole {
		actions = append(actions, chaosAction{true, func(n *Node, d time.Duration, _ *rand.Rand) {
			cnt.Blackhole.Add(1)
			ch.note(n, "blackhole for %v", d)
			gen := n.blackhole()
			sleepCtx(ctx, d)
			n.endBlackhole(gen)
		}})
	}
	if p.RestartKeep {
		actions = append(actions, chaosAction{true, func(n *Node, d time.Duration, _ *rand.Rand) {
			cnt.RestartKeep.Add(1)
			ch.note(n, "restart keeping data, away %v", d)
			_ = n.Restart(false, d)
		}})
	}
	if p.RestartDelayed {
		// Longer than any key can live: the largest TTL on the slowest
		// clock the profile allows, after the largest backward step, plus
		// a margin.
		rate := p.ClockRate + p.FastClocks
		delay := time.Duration(float64(p.MaxTTL)/(1-rate)) + 2*p.ClockStep + p.MaxTTL/10 + 20*time.Millisecond
		actions = append(actions, chaosAction{true, func(n *Node, _ time.Duration, _ *rand.Rand) {
			cnt.RestartDelayed.Add(1)
			ch.note(n, "restart losing data, away %v", delay)
			_ = n.Restart(true, delay)
		}})
	}
	if p.RestartNoDelay {
		actions = append(actions, chaosAction{true, func(n *Node, _ time.Duration, _ *rand.Rand) {
			cnt.RestartNoDelay.Add(1)
			ch.note(n, "restart losing data, back at once")
			_ = n.Restart(true, 0)
		}})
	}
	if p.Failover {
		actions = append(actions, chaosAction{true, func(n *Node, _ time.Duration, rng *rand.Rand) {
			cnt.Failovers.Add(1)
			lag := span(rng, 0, p.FailoverLag)
			ch.note(n, "failover to a replica %v behind", lag)
			_ = n.Failover(lag, 0)
		}})
	}
	actions = append(actions, ch.dataSetActions(ctx)...)
	return append(actions, ch.shardActions()...)
}

// shardActions lists the sharded clusters' faults the profile enables
// (Migrations, WipeMoves).
func (ch *Chaos) shardActions() []chaosAction {
	p, cnt := ch.p, &ch.Counts
	var actions []chaosAction
	if p.Migrations {
		actions = append(actions, chaosAction{false, func(n *Node, _ time.Duration, rng *rand.Rand) {
			r := n.shard.Load()
			if r == nil || len(r.group.nodes) < 2 {
				return
			}
			slot := n.someSlot(rng)
			if r.group.movedWithin(slot, p.MaxTTL) {
				return // a key meets one move in its life (see Migrations)
			}
			to := r.group.nodes[(r.k+1+rng.IntN(len(r.group.nodes)-1))%len(r.group.nodes)]
			if _, err := MoveSlot(slot, to); err == nil {
				cnt.Migrations.Add(1)
			}
		}})
	}
	if p.WipeMoves {
		actions = append(actions, chaosAction{true, func(n *Node, _ time.Duration, rng *rand.Rand) {
			r := n.shard.Load()
			if r == nil || len(r.group.nodes) < 2 {
				return
			}
			slot := n.someSlot(rng) // a lock key's, found before the wipe empties n
			ch.wipeMove(r.group, slot, rng)
			if rng.IntN(2) == 0 {
				// the same slot on another cluster too: the key lost on two
				// Redlock nodes, a majority of three, so that only the rule
				// keeps its holder's majority from being taken
				if g := ch.otherGroup(r.group, rng); g != nil {
					ch.wipeMove(g, slot, rng)
				}
			}
		}})
	}
	return actions
}

// wipeMove empties the shard of g that serves slot and moves the slot to
// another shard of g (WipeMoves); nothing if the slot moved within MaxTTL.
func (ch *Chaos) wipeMove(g *shardGroup, slot int, rng *rand.Rand) {
	if g.movedWithin(slot, ch.p.MaxTTL) {
		return
	}
	k := int(g.owner.Load()[slot])
	to := g.nodes[(k+1+rng.IntN(len(g.nodes)-1))%len(g.nodes)]
	g.nodes[k].Flush()
	if _, err := MoveSlot(slot, to); err == nil {
		ch.Counts.WipeMoves.Add(1)
	} else {
		ch.Counts.Wipes.Add(1) // the move was refused (a shard down): a wipe alone
	}
}

// otherGroup returns a sharded cluster among ch's nodes other than g (nil
// if none).
func (ch *Chaos) otherGroup(g *shardGroup, rng *rand.Rand) *shardGroup {
	var others []*shardGroup
	for _, n := range ch.cl.Nodes {
		if r := n.shard.Load(); r != nil && r.group != g && !slices.Contains(others, r.group) {
			others = append(others, r.group)
		}
	}
	if len(others) == 0 {
		return nil
	}
	return others[rng.IntN(len(others))]
}

// someSlot returns the slot of a lock key n holds, else a slot it
// serves, else any (the fault's target: migrations that move keys matter
// most). A data-set marker's key (redlock's, scripts.MarkerPrefix) is no
// lock key: its slot moves only when drawn among the served slots, as a
// resharding moves it rarely.
func (n *Node) someSlot(rng *rand.Rand) int {
	n.mu.Lock()
	for key := range n.dbs[0] {
		if strings.HasPrefix(key, scripts.MarkerPrefix) {
			continue
		}
		n.mu.Unlock()
		return keyHashSlot([]byte(key))
	}
	n.mu.Unlock()
	r := n.shard.Load()
	owner := r.group.owner.Load()
	start := rng.IntN(clusterSlots)
	for i := 0; i < clusterSlots; i++ {
		if s := (start + i) % clusterSlots; int(owner[s]) == r.k {
			return s
		}
	}
	return start
}

// clock steps n's clock by up to ±ClockStep every U[MaxTTL+1ms,
// 1.5*MaxTTL+1ms) (never two steps within one TTL) and redraws its rate
// in [-ClockRate, ClockRate], both signs equally likely.
func (ch *Chaos) clock(ctx context.Context, n *Node, rng *rand.Rand) {
	p := ch.p
	for {
		if !sleepCtx(ctx, span(rng, p.MaxTTL+time.Millisecond, p.MaxTTL*3/2+time.Millisecond)) {
			return
		}
		rate := (rng.Float64()*2 - 1) * p.ClockRate
		step := time.Duration((rng.Float64()*2 - 1) * float64(p.ClockStep))
		if rng.IntN(2) == 0 && p.ClockStep > 0 {
			// half the steps at the bound: a clock that gains the whole allowance
			step, rate = p.ClockStep, p.ClockRate
		}
		ch.note(n, "clock step %v, rate %+.4f", step, rate)
		n.StepClock(step, rate)
		ch.Counts.ClockSteps.Add(1)
	}
}

// sleepCtx sleeps d; false if ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
