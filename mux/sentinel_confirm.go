package mux

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redmux/redmux/resp"
)

// This file holds what makes a Sentinel node's connection the primary its
// sentinels' majority names (docs/OPERATIONS.md, "One primary per
// Sentinel node", issue 45): a set-up is kept only if, once it is done, a
// majority of the node's sentinels name the process it reached and no
// switch was announced meanwhile; the replicas they know are how many
// acknowledgements a grant waits for (Replicas).

// errSwitchedDuringSetup fails a set-up whose node saw a switch announced
// while it ran.
var errSwitchedDuringSetup = errors.New("a sentinel announced +switch-master while the connection was set up: set up again")

// sentinelView is what one sentinel said of the master: its primary and
// how many of its replicas it sees healthy (flags exactly "slave").
type sentinelView struct {
	addr     string // the sentinel
	primary  string // host:port; "" when it did not answer one
	replicas int
	err      error
}

// askAll asks every sentinel of ss at once, each bounded by deadline, for
// the primary (SENTINEL GET-MASTER-ADDR-BY-NAME) and its replicas
// (SENTINEL REPLICAS), in one pipeline per sentinel. It returns once the
// question about primary is settled: a majority of the sentinels named
// it, or so many answered otherwise that no majority can. A sentinel that
// hangs then costs nothing while the others agree (issue 45's hung
// sentinel cost every set-up and every switch check the whole
// DialTimeout); the views of those not waited for say errNotWaited.
func (c *Client) askAll(ss *sentinelSpec, deadline time.Time, primary string) []sentinelView {
	type answer struct {
		k int
		v sentinelView
	}
	n := len(ss.addrs)
	ch := make(chan answer, n) // the askers never block, waited for or not
	out := make([]sentinelView, n)
	for k, sa := range ss.addrs {
		out[k] = sentinelView{addr: sa, err: errNotWaited}
		go func() { ch <- answer{k, c.askView(ss, sa, deadline)} }()
	}
	yes, no := 0, 0
	for range n {
		a := <-ch
		out[a.k] = a.v
		if a.v.err == nil && a.v.primary == primary {
			yes++
		} else {
			no++
		}
		//mutant:sentinel-hung-waited
		if 2*yes > n || 2*(n-no) <= n {
			break
		}
	}
	return out
}

// errNotWaited: a sentinel's answer was not waited for, the others had
// settled the question.
var errNotWaited = errors.New("not waited for: the others settled it")

func (c *Client) askView(ss *sentinelSpec, sa string, deadline time.Time) sentinelView {
	v := sentinelView{addr: sa}
	sc, err := c.sentinelDial(ss, sa, deadline)
	if err != nil {
		v.err = err
		return v
	}
	defer sc.close()
	if err := sc.send(deadline, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", ss.master); err != nil {
		v.err = err
		return v
	}
	if err := sc.send(deadline, "SENTINEL", "REPLICAS", ss.master); err != nil {
		v.err = err
		return v
	}
	rep, err := sc.reply(deadline)
	if err != nil {
		v.err = err
		return v
	}
	host, port, err := ss.masterAddr(rep)
	if err != nil {
		v.err = err
		return v
	}
	v.primary = net.JoinHostPort(host, strconv.Itoa(port))
	if rep, err = sc.reply(deadline); err == nil {
		v.replicas = healthyReplicas(rep)
	}
	return v
}

// healthyReplicas counts the replicas of a SENTINEL REPLICAS reply whose
// flags are "slave" alone (not s_down, o_down or disconnected). A reply
// of another shape counts none.
func healthyReplicas(rep resp.Reply) int {
	if rep.Type != resp.TypeArray && rep.Type != resp.TypeSet {
		return 0
	}
	n := 0
	it := rep.Iter()
	var r resp.Reply
	for it.Next(&r) {
		if flags, ok := field(r, "flags"); ok && bytes.Equal(flags, []byte("slave")) {
			n++
		}
	}
	return n
}

// field returns the value of key in a flat array of name, value pairs
// (RESP2) or a map (RESP3).
func field(r resp.Reply, key string) ([]byte, bool) {
	if r.Type != resp.TypeArray && r.Type != resp.TypeMap {
		return nil, false
	}
	it := r.Iter()
	var k, v resp.Reply
	for it.Next(&k) && it.Next(&v) {
		if string(k.Data) == key {
			return v.Data, true
		}
	}
	return nil, false
}

// confirmPrimary reports whether a majority of ss's sentinels name
// primary now, and the replicas they see (the median of the counts of
// those that name it, so that no one sentinel's stale count decides); the
// error says what they said when they do not.
func (c *Client) confirmPrimary(ss *sentinelSpec, primary string, deadline time.Time) (int, error) {
	views := c.askAll(ss, deadline, primary)
	var counts []int
	var said []string
	for _, v := range views {
		switch {
		case v.err != nil:
			said = append(said, "sentinel "+v.addr+": "+v.err.Error())
		case v.primary == primary:
			counts = append(counts, v.replicas)
		default:
			said = append(said, "sentinel "+v.addr+" names "+v.primary)
		}
	}
	if 2*len(counts) <= len(views) {
		return 0, fmt.Errorf("%s, which answers ROLE master, is named by %d of %d sentinels, not a majority (%s): not the node's primary for the sentinels, or they cannot tell",
			primary, len(counts), len(views), strings.Join(said, "; "))
	}
	slices.Sort(counts)
	return counts[len(counts)/2], nil
}

// Replicas returns how many replicas node i's sentinels saw healthy when
// its newest connection was set up (the median of the majority that
// named its primary), the acknowledgements a grant on the node waits for
// (redlock, WAIT; docs/OPERATIONS.md); -1 for any node that is not a
// Sentinel node, or before its first set-up.
func (c *Client) Replicas(i int) int {
	if i < 0 || i >= c.n || c.cfg.nodes[i].sentinel == nil {
		return -1
	}
	if p := c.nodes[i].primary.Load(); p == nil {
		return -1
	}
	return int(c.nodes[i].replicas.Load())
}

// errNoReply: a sentinel (or cluster member) did not answer by the
// deadline.
var errNoReply = errors.New("no reply within DialTimeout")

// The switch watcher's liveness check: a PING after watchPing without a
// message, answered within pingWait (or DialTimeout, if shorter). A hung
// sentinel is left 0.75 s after its last word; a slow one that misses the
// deadline costs a resubscription to the next (which is asked for the
// primary), nothing else. (At 0.5 s and 1 s, clients beside a hung
// sentinel followed a switch 1.9-2.2 s late in TestSentinelGroupsSoak.)
const (
	watchPing = 250 * time.Millisecond
	pingWait  = 500 * time.Millisecond
)

// majorityNamesCurrent reports whether a majority of ss's sentinels name
// node i's current primary (not other, what one sentinel said), asked
// within wait: then other is a lagging or bogus answer, and nothing is cut
// off.
func (c *Client) majorityNamesCurrent(i int, ss *sentinelSpec, other string, wait time.Duration) bool {
	cur := c.nodes[i].primary.Load()
	if cur == nil || *cur == other {
		return false
	}
	n := 0
	for _, v := range c.askAll(ss, time.Now().Add(wait), *cur) {
		if v.err == nil && v.primary == *cur {
			n++
		}
	}
	return 2*n > len(ss.addrs)
}

// How a +switch-master is checked: the process it names is asked ROLE
// within switchAsk (or DialTimeout, if shorter), then the sentinels; a
// claim that neither bears out is checked again every switchRecheck,
// switchChecks times: a real switch reaches the other sentinels within
// their hello period (2 s) of its announcement.
const (
	switchRecheck = 100 * time.Millisecond
	switchChecks  = 30
)

// switchAsk is a variable for tests on a loaded machine.
var switchAsk = 100 * time.Millisecond

// claimSwitch handles one sentinel's +switch-master naming primary for
// node i: it is checked before anything is cut off (issue 46: one
// sentinel's bogus messages cut the node off, each one). The node's
// connections are replaced as soon as the process named answers ROLE
// master (a real switch: its replica was promoted; the other sentinels
// may still name the old primary) or a majority of the sentinels does not
// name the current primary within switchAsk (they name another, or cannot
// tell in time: then the claim is trusted, as it was before), checked at
// once and again every switchRecheck; a claim naming a process that is no
// primary, which a majority keeps contradicting, cuts nothing off. One
// check runs at a time per node, in a goroutine of its own (so the watcher
// keeps reading); claims that come meanwhile are covered by it.
func (c *Client) claimSwitch(i int, ss *sentinelSpec, primary string) {
	nd := &c.nodes[i]
	if cur := nd.primary.Load(); cur == nil || *cur == primary {
		return
	}
	if !nd.switchCheck.CompareAndSwap(false, true) {
		return
	}
	c.supWG.Add(1) // the watcher's own count is held: Close waits for this one too
	go func() {
		defer c.supWG.Done()
		defer nd.switchCheck.Store(false)
		t := time.NewTimer(switchRecheck)
		defer t.Stop()
		for k := 0; k < switchChecks && !c.closed.Load(); k++ {
			wait := min(switchAsk, c.cfg.DialTimeout)
			if c.roleMaster(i, primary, wait) || !c.majorityNamesCurrent(i, ss, primary, wait) {
				c.switched(i, primary)
				return
			}
			t.Reset(switchRecheck)
			select {
			case <-c.done:
				return
			case <-t.C:
			}
		}
	}()
}

// roleMaster reports whether the process at addr answers ROLE master
// within wait, asked with node i's credentials.
func (c *Client) roleMaster(i int, addr string, wait time.Duration) bool {
	ns := &c.cfg.nodes[i]
	deadline := time.Now().Add(wait)
	sc, err := c.plainDial(addr, ns.username, ns.password, deadline)
	if err != nil {
		return false
	}
	defer sc.close()
	if sc.send(deadline, "ROLE") != nil {
		return false
	}
	rep, err := sc.reply(deadline)
	return err == nil && checkRole(rep, nil) == nil
}
