package fakeserver

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/redcon"
)

// Errors returned by the Go API.
var (
	// ErrClosed is returned by operations on a closed node.
	ErrClosed = errors.New("fakeserver: node closed")
	// ErrRebind is returned (wrapped) when a node cannot listen on its
	// address again after Down/Restart (another process took the port).
	ErrRebind = errors.New("fakeserver: cannot listen on the node's address again")
)

// Config configures a node. The zero value is a working node on a free
// loopback port with no password and the FAKE admin command enabled.
type Config struct {
	// Addr is the listen address; default "127.0.0.1:0" (a free port).
	Addr string
	// Password, if set, makes AUTH required (requirepass semantics: it is
	// the password of the user "default").
	Password string
	// Users are optional ACL-style users mapped to their passwords, for
	// "AUTH user pass" and "HELLO 3 AUTH user pass".
	Users map[string]string
	// DisableAdmin turns the FAKE admin command off (it is then an unknown
	// command, as on a real Redis).
	DisableAdmin bool
	// RefuseTracking makes CLIENT TRACKING an error reply (NOPERM, as
	// Redis answers a user whose ACL forbids it, or a proxy): a node that
	// does not tell its clients of its flushes (Node.RefuseTracking).
	RefuseTracking bool
	// SweepInterval is the active expiry sweep period; default 100ms.
	SweepInterval time.Duration
	// ScriptBusyAfter is how long a Lua script may run before other
	// clients get Redis's BUSY error (Redis's busy-reply-threshold);
	// default DefaultScriptBusyAfter (5s).
	ScriptBusyAfter time.Duration
	// ScriptKillAfter stops a script that runs this long, even one that has
	// written (a real Redis would run it forever); default
	// DefaultScriptKillAfter (10s). It is raised to ScriptBusyAfter if lower.
	ScriptKillAfter time.Duration
	// LuaOnly runs redmux's own lock scripts in Lua too, instead of their
	// native implementations (same replies, slower; for tests).
	LuaOnly bool
	// MaxClients is the most connections the node serves at once
	// (Redis's maxclients); default DefaultMaxClients. A client over it
	// gets "-ERR max number of clients reached" and is disconnected.
	MaxClients int
	// QueryBufferLimit bounds the bytes of requests still arriving that
	// the node's connections hold (read buffers beyond their first 16 KiB,
	// and what redcon holds of an unfinished request): Redis's
	// client-query-buffer-limit, for the node as a whole. Default
	// DefaultQueryBufferLimit, negative for none. A connection whose
	// request would pass it gets a protocol error and is closed; the others
	// are served.
	QueryBufferLimit int64
	// StartUptime is the uptime (INFO server's uptime_in_seconds) the node
	// reports at start; default DefaultStartUptime, negative for a fresh
	// start (0 s, as a real server just started). Restart and Failover
	// report the uptime since they brought the node back.
	StartUptime time.Duration
}

// NodeStats are counters of one node since it started (they survive
// Down/Up/Restart).
type NodeStats struct {
	Commands    int64 // commands received (including rejected ones)
	Accepted    int64 // connections accepted
	CurrentConn int64 // connections open now
	Restarts    int64 // completed Restart calls
	Expired     int64 // keys removed by expiry (lazy and active)
}

// Node is one fake Redis server. All methods are safe for concurrent use.
type Node struct {
	cfg   Config
	addr  string
	base  time.Time // monotonic base of the node clock
	id    atomic.Int64
	qbuf  atomic.Int64                // request bytes charged against QueryBufferLimit (conn.go)
	life  atomic.Pointer[incarnation] // run_id, replication ids, start (incarnation.go)
	shard shardField                  // its slots in a ShardedCluster (slots.go); nil: standalone

	// keyspace and clock, guarded by mu
	mu       sync.Mutex
	dbs      [numDBs]map[string]entry
	scripts  map[string]string // loaded scripts: SHA -> body
	watched  map[watchKey]*watchVer
	lua      scriptEngine // Lua state (lua.go); used with mu held
	clockOff int64        // ns
	drift    float64
	driftAt  int64 // monotonic ns since base when SetClock was called

	// faults
	latFixed    atomic.Int64
	latJitter   atomic.Int64
	hole        atomic.Pointer[gate]
	failN       atomic.Int64
	failText    atomic.Pointer[string]
	malformN    atomic.Int64
	faultMu     sync.Mutex
	reqFixed    atomic.Int64 // request delay (faults.go)
	reqJitter   atomic.Int64
	part        atomic.Int32  // Direction cut by Partition
	infoRefused atomic.Bool   // RefuseInfo: INFO answers NOPERM (dataset.go)
	dataGen     atomic.Uint64 // data sets lost or replaced whole (DataGen)
	holeGen     uint64        // Blackhole calls so far, guarded by faultMu (a timer ends only its own)
	partGen     uint64        // Partition calls so far, guarded by faultMu
	timerRuns   atomic.Int64  // fault timers that have run out (acted or not); tests wait on it
	capEvery    atomic.Int64  // throughput cap: ns of service per command (faults.go); 0 = none
	capMu       sync.Mutex
	capNext     int64 // unix ns when the next command may run, guarded by capMu

	// lifecycle
	ctl       sync.Mutex // serializes Down/Up/Restart/Close
	downGen   uint64     // Down calls so far (Restart's and Failover's included), guarded by ctl
	ln        net.Listener
	serveDone chan struct{}
	connMu    sync.Mutex
	conns     map[*fconn]struct{}
	// flushGen counts the flushes of the data set (FLUSHALL, FLUSHDB,
	// Flush, Resync), bumped under mu: flushPush tells tracking clients
	flushGen atomic.Uint64
	// trackingRefused (RefuseTracking, Config.RefuseTracking): CLIENT
	// TRACKING answers NOPERM
	trackingRefused atomic.Bool

	connWG  sync.WaitGroup
	bgMu    sync.Mutex
	bgWG    sync.WaitGroup
	closed  atomic.Bool
	closeCh chan struct{}

	stats struct {
		commands, accepted, current, restarts, expired atomic.Int64
		rejected, acceptErrors                         atomic.Int64 // over MaxClients; accept errors waited out
	}
	cmdStats []cmdCounter
}

// StartNode starts a node and returns once it accepts connections.
func StartNode(cfg Config) (*Node, error) {
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.SweepInterval <= 0 {
		cfg.SweepInterval = 100 * time.Millisecond
	}
	if cfg.ScriptBusyAfter <= 0 {
		cfg.ScriptBusyAfter = DefaultScriptBusyAfter
	}
	if cfg.ScriptKillAfter <= 0 {
		cfg.ScriptKillAfter = DefaultScriptKillAfter
	}
	cfg.ScriptKillAfter = max(cfg.ScriptKillAfter, cfg.ScriptBusyAfter)
	if cfg.MaxClients <= 0 {
		cfg.MaxClients = DefaultMaxClients
	}
	if cfg.QueryBufferLimit == 0 {
		cfg.QueryBufferLimit = DefaultQueryBufferLimit
	}
	n := &Node{
		cfg:      cfg,
		base:     time.Now(),
		scripts:  make(map[string]string),
		watched:  make(map[watchKey]*watchVer),
		conns:    make(map[*fconn]struct{}),
		closeCh:  make(chan struct{}),
		cmdStats: make([]cmdCounter, len(commandTable)),
	}
	for i := range n.dbs {
		n.dbs[i] = make(map[string]entry)
	}
	n.trackingRefused.Store(cfg.RefuseTracking)
	if cfg.StartUptime == 0 {
		cfg.StartUptime = DefaultStartUptime
	}
	n.cfg.StartUptime = cfg.StartUptime
	n.newLife(max(cfg.StartUptime, 0), false, false)
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("fakeserver: listen %s: %w", cfg.Addr, err)
	}
	n.addr = ln.Addr().String()
	n.serve(ln)
	n.goBG(n.sweeper)
	return n, nil
}

// Addr returns the node's "host:port"; it is stable across Down, Up and
// Restart.
func (n *Node) Addr() string { return n.addr }

// serve starts a redcon server on ln. Callers hold ctl (or own n).
func (n *Node) serve(ln net.Listener) {
	wl := &listener{Listener: ln, node: n, closed: make(chan struct{})}
	n.ln = wl
	done := make(chan struct{})
	n.serveDone = done
	go func() {
		defer close(done)
		_ = redcon.Serve(wl, n.handle, n.accept, n.closedConn)
	}()
}

type listener struct {
	net.Listener
	node      *Node
	closed    chan struct{}
	closeOnce sync.Once
}

// Accept waits out accept errors other than a closed listener (EMFILE,
// ENFILE, ECONNABORTED) with a backoff of 5ms doubling to 1s, as net/http
// does: redcon's loop retries at once, and on EMFILE it spun a core without
// serving anyone (issue 34 R10).
func (l *listener) Accept() (net.Conn, error) {
	var delay time.Duration
	for {
		c, err := l.Listener.Accept()
		if err == nil {
			return newFconn(c, l.node), nil
		}
		if errors.Is(err, net.ErrClosed) {
			return nil, err
		}
		l.node.stats.acceptErrors.Add(1)
		delay = min(max(2*delay, 5*time.Millisecond), time.Second)
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-l.closed:
			t.Stop()
			return nil, net.ErrClosed
		}
	}
}

func (l *listener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// DefaultMaxClients is Redis's default maxclients.
const DefaultMaxClients = 10000

const maxClientsErr = "-ERR max number of clients reached\r\n"

func (n *Node) accept(rc redcon.Conn) bool {
	fc, ok := rc.NetConn().(*fconn)
	if !ok || n.closed.Load() {
		return false
	}
	if n.stats.current.Load() >= int64(n.cfg.MaxClients) {
		// as Redis: the client is told, then disconnected
		_ = fc.Conn.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = fc.Conn.Write([]byte(maxClientsErr))
		n.stats.rejected.Add(1)
		return false
	}
	fc.id = n.id.Add(1)
	_, defaultHasPass := n.cfg.Users["default"]
	fc.authed = n.cfg.Password == "" && !defaultHasPass
	fc.user = "default"
	fc.out = &outConn{Conn: rc, fc: fc}
	rc.SetContext(fc)
	n.connMu.Lock()
	n.conns[fc] = struct{}{}
	n.connMu.Unlock()
	n.connWG.Add(1)
	n.stats.accepted.Add(1)
	n.stats.current.Add(1)
	return true
}

func (n *Node) closedConn(rc redcon.Conn, _ error) {
	if fc, ok := rc.Context().(*fconn); ok {
		n.connMu.Lock()
		delete(n.conns, fc)
		n.connMu.Unlock()
		n.unwatchAll(fc, false)
		n.qbuf.Add(-fc.charged.Swap(0))
		n.stats.current.Add(-1)
		n.connWG.Done()
	}
}

// goBG runs f in a goroutine that Close waits for; it does nothing once the
// node is closed.
func (n *Node) goBG(f func()) {
	n.bgMu.Lock()
	defer n.bgMu.Unlock()
	if n.closed.Load() {
		return
	}
	n.bgWG.Add(1)
	go func() {
		defer n.bgWG.Done()
		f()
	}()
}

// Close closes the listener and every connection and waits until every
// goroutine the node started has exited.
func (n *Node) Close() error {
	n.bgMu.Lock()
	if n.closed.Swap(true) {
		n.bgMu.Unlock()
		return nil
	}
	close(n.closeCh)
	n.bgMu.Unlock()
	n.Heal()
	n.bgWG.Wait()
	n.ctl.Lock()
	defer n.ctl.Unlock()
	n.downLocked()
	return nil
}

// Down closes the listener (new connections are refused) and drops every
// open connection. It returns once they are all gone.
func (n *Node) Down() { n.down() }

// down is Down; it returns the generation of this Down, for upIf.
func (n *Node) down() uint64 {
	n.ctl.Lock()
	defer n.ctl.Unlock()
	n.downGen++
	n.downLocked()
	return n.downGen
}

func (n *Node) downLocked() {
	if n.ln == nil {
		return
	}
	_ = n.ln.Close()
	<-n.serveDone
	n.ln = nil
	n.connMu.Lock()
	list := make([]*fconn, 0, len(n.conns))
	for fc := range n.conns {
		list = append(list, fc)
	}
	n.connMu.Unlock()
	for _, fc := range list {
		_ = fc.closeNow()
	}
	n.connWG.Wait()
}

// Up starts accepting connections again after Down, on the same address.
// If the address cannot be bound again within 2s (another process took the
// port) the node stays down; Restart reports that as an error.
func (n *Node) Up() { _ = n.up() }

func (n *Node) up() error {
	n.ctl.Lock()
	defer n.ctl.Unlock()
	return n.upLocked()
}

// upIf brings the node up only if the Down of generation gen is still the
// latest: a timer that ends a down (FAKE DOWN <duration>, a restart's
// delay) must not undo a later Down. superseded is true if it did nothing
// for that reason.
func (n *Node) upIf(gen uint64) (superseded bool, err error) {
	n.ctl.Lock()
	defer n.ctl.Unlock()
	if n.downGen != gen {
		return true, nil
	}
	return false, n.upLocked()
}

func (n *Node) upLocked() error {
	if n.closed.Load() {
		return ErrClosed
	}
	if n.ln != nil {
		return nil
	}
	var err error
	for deadline := time.Now().Add(2 * time.Second); ; {
		var ln net.Listener
		ln, err = net.Listen("tcp", n.addr)
		if err == nil {
			n.serve(ln)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w %s: %v", ErrRebind, n.addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// IsDown reports whether the node is refusing connections.
func (n *Node) IsDown() bool {
	n.ctl.Lock()
	defer n.ctl.Unlock()
	return n.ln == nil
}

// Restart drops every connection, wipes the keyspace if loseData, empties
// the script cache (always: Redis never persists EVAL scripts, so EVALSHA
// answers NOSCRIPT after any restart), stays unreachable (connections refused) for delay, then
// accepts again on the same address. It returns when the node is back, or
// after delay if a Down during the delay took the node down again (it then
// stays down: the later Down wins).
// The node comes back as a new process: a new run_id, uptime from zero,
// and a new master_replid when it lost its data (docs/OPERATIONS.md).
func (n *Node) Restart(loseData bool, delay time.Duration) error {
	if n.closed.Load() {
		return ErrClosed
	}
	gen := n.down()
	if loseData {
		n.wipe()
	}
	n.flushScripts()
	n.newLife(0, !loseData, false)
	return n.comeBack(gen, delay)
}

// comeBack ends a Restart or Failover whose Down had generation gen: the
// node stays away for delay, then accepts again on its address, unless
// another Down came meanwhile.
func (n *Node) comeBack(gen uint64, delay time.Duration) error {
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-n.closeCh:
			t.Stop()
			return ErrClosed
		}
	}
	if _, err := n.upIf(gen); err != nil {
		return err
	}
	n.stats.restarts.Add(1)
	return nil
}

func (n *Node) wipe() {
	n.dataGen.Add(1)
	n.mu.Lock()
	for i := range n.dbs {
		n.dbs[i] = make(map[string]entry)
	}
	n.touchDB(-1)
	n.mu.Unlock()
}

// flushScripts empties the script cache and drops the Lua state, as a new
// process starts with neither (Restart, Failover).
func (n *Node) flushScripts() {
	n.mu.Lock()
	n.scripts = make(map[string]string)
	n.resetLua()
	n.mu.Unlock()
}

// Get returns a copy of the value of key in database 0, honouring expiry.
func (n *Node) Get(key string) ([]byte, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	e, ok := n.lookup(0, key, n.nowLocked())
	if !ok {
		return nil, false
	}
	return append([]byte(nil), e.val...), true
}

// PTTL returns the remaining time to live of key in database 0 on the
// node's clock. Sentinels as Redis's PTTL: -2 (nanoseconds) when the key
// does not exist, -1 when it has no expiry.
func (n *Node) PTTL(key string) time.Duration {
	n.mu.Lock()
	defer n.mu.Unlock()
	now := n.nowLocked()
	e, ok := n.lookup(0, key, now)
	if !ok {
		return -2
	}
	if e.exp == 0 {
		return -1
	}
	d := time.Duration(e.exp)*time.Millisecond - time.Duration(now)
	if d < 0 {
		d = 0
	}
	return d
}

// DBSize returns the number of keys in database 0 (expired keys not yet
// swept are not counted).
func (n *Node) DBSize() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.dbsizeLocked(0)
}

// Stats returns the node's counters.
func (n *Node) Stats() NodeStats {
	return NodeStats{
		Commands:    n.stats.commands.Load(),
		Accepted:    n.stats.accepted.Load(),
		CurrentConn: n.stats.current.Load(),
		Restarts:    n.stats.restarts.Load(),
		Expired:     n.stats.expired.Load(),
	}
}
