package fakeserver

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redmux/redmux/redlock/scripts"
)

func TestLatencyPerConnectionFIFO(t *testing.T) {
	n := startNode(t, Config{})
	const lat = 150 * time.Millisecond
	n.SetLatency(lat, 0)
	a, b := dial(t, n.Addr()), dial(t, n.Addr())
	// A pipelines 20 requests; their replies must come back in order after
	// about one latency, not 20 (no compounding), and B is not held up.
	start := time.Now()
	var batch []byte
	for i := 0; i < 20; i++ {
		batch = append(batch, enc("ECHO", strconv.Itoa(i))...)
	}
	if _, err := a.c.Write(batch); err != nil {
		t.Fatal(err)
	}
	bStart := time.Now()
	eqReply(t, "B ping", b.do("PING"), pongReply)
	bTook := time.Since(bStart)
	for i := 0; i < 20; i++ {
		eqReply(t, "A order", a.read(), bulk(strconv.Itoa(i)))
	}
	aTook := time.Since(start)
	if aTook < lat || bTook < lat {
		t.Errorf("replies came before the latency: A %v B %v", aTook, bTook)
	}
	// The bounds are the faults' own values, not a guess at the machine's
	// speed: compounding would take 20 latencies for A, and B queued behind
	// A would wait as long (a 10-latency bound failed once in ~50 -race
	// runs on a loaded 2-core machine).
	if aTook >= 20*lat {
		t.Errorf("pipelined replies took %v: latency compounded per request", aTook)
	}
	if bTook >= 20*lat {
		t.Errorf("B waited %v behind A", bTook)
	}

	// Trickled requests on one connection: each reply is due one latency
	// after its own request, not after the previous reply. Ten requests:
	// about 1 latency + 9 gaps (420 ms) against compounding's 10 latencies
	// (1.5 s), the bound; with 5, a loaded run had 450 ms of margin.
	start = time.Now()
	const trickle = 10
	for i := 0; i < trickle; i++ {
		a.send("ECHO", strconv.Itoa(i))
		time.Sleep(30 * time.Millisecond)
	}
	for i := 0; i < trickle; i++ {
		eqReply(t, "trickle order", a.read(), bulk(strconv.Itoa(i)))
	}
	if took := time.Since(start); took >= trickle*lat {
		t.Errorf("trickled replies took %v: latency compounded per request (that takes %v)", took, trickle*lat)
	}

	// Jitter keeps FIFO order.
	n.SetLatency(time.Millisecond, 20*time.Millisecond)
	for i := 0; i < 30; i++ {
		a.send("ECHO", strconv.Itoa(i))
	}
	for i := 0; i < 30; i++ {
		eqReply(t, "jitter order", a.read(), bulk(strconv.Itoa(i)))
	}
	n.SetLatency(0, 0)
	eqReply(t, "no latency", a.do("PING"), pongReply)
}

func TestLatencyQuitDrainsReplies(t *testing.T) {
	n := startNode(t, Config{})
	n.SetLatency(50*time.Millisecond, 0)
	c := dial(t, n.Addr())
	c.send("PING")
	c.send("QUIT")
	eqReply(t, "ping", c.read(), pongReply)
	eqReply(t, "quit", c.read(), okReply)
	if _, err := c.tryRead(2 * time.Second); err == nil {
		t.Error("connection still open after QUIT")
	}
}

func dialErr(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
	}
	return err
}

func TestDownUp(t *testing.T) {
	n := startNode(t, Config{})
	c := dial(t, n.Addr())
	eqReply(t, "set", c.do("SET", "k", "v"), okReply)
	addr := n.Addr()
	n.Down()
	if !n.IsDown() {
		t.Error("IsDown false after Down")
	}
	if err := dialErr(addr); err == nil {
		t.Error("dial succeeded while down")
	}
	if _, err := c.tryRead(2 * time.Second); err == nil {
		t.Error("open connection not dropped by Down")
	}
	n.Down() // idempotent
	n.Up()
	if n.Addr() != addr {
		t.Errorf("addr changed: %s -> %s", addr, n.Addr())
	}
	eqReply(t, "data kept", dial(t, addr).do("GET", "k"), bulk("v"))
}

func TestBlackholeHeal(t *testing.T) {
	n := startNode(t, Config{})
	a := dial(t, n.Addr())
	n.Blackhole()
	a.send("SET", "k", "v")
	if r, err := a.tryRead(200 * time.Millisecond); err == nil {
		t.Fatalf("got %q during blackhole", r)
	}
	b := dial(t, n.Addr()) // still accepts
	b.send("PING")
	if _, err := b.tryRead(100 * time.Millisecond); err == nil {
		t.Fatal("new connection answered during blackhole")
	}
	if _, ok := n.Get("k"); ok {
		t.Fatal("request executed during blackhole")
	}
	// the admin command still works on a blackholed node
	adm := dial(t, n.Addr())
	eqReply(t, "admin during blackhole", adm.do("FAKE", "HEAL"), okReply)
	eqReply(t, "held SET answered after heal", a.read(), okReply)
	eqReply(t, "held PING answered after heal", b.read(), pongReply)
	if v, _ := n.Get("k"); string(v) != "v" {
		t.Errorf("held SET not executed: %q", v)
	}
	// Heal via Go API and timed blackhole via admin
	eqReply(t, "timed blackhole", adm.do("FAKE", "BLACKHOLE", "150ms"), okReply)
	start := time.Now()
	eqReply(t, "auto heal", a.do("PING"), pongReply)
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Errorf("answered after %v, before the blackhole ended", d)
	}
}

func TestRestart(t *testing.T) {
	n := startNode(t, Config{})
	c := dial(t, n.Addr())
	eqReply(t, "load", c.do("SCRIPT", "LOAD", scripts.Release.Text), bulk(scripts.Release.SHA))
	eqReply(t, "set", c.do("SET", "k", "v"), okReply)
	if err := n.Restart(false, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.tryRead(time.Second); err == nil {
		t.Error("connection survived restart")
	}
	c = dial(t, n.Addr())
	eqReply(t, "kept", c.do("GET", "k"), bulk("v"))
	// Redis never persists EVAL scripts: a restart keeping data loses them.
	eqReply(t, "script lost", c.do("EVALSHA", scripts.Release.SHA, "1", "k", "v"), errReply("NOSCRIPT No matching script. Please use EVAL."))

	c.do("SET", "k", "v")
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- n.Restart(true, 300*time.Millisecond) }()
	time.Sleep(100 * time.Millisecond)
	if err := dialErr(n.Addr()); err == nil {
		t.Error("node reachable during delayed restart")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("restart returned after %v, before its delay", d)
	}
	c = dial(t, n.Addr())
	eqReply(t, "lost", c.do("GET", "k"), nullBulk)
	eqReply(t, "scripts lost", c.do("EVALSHA", scripts.Release.SHA, "1", "k", "v"), errReply("NOSCRIPT No matching script. Please use EVAL."))
	if n.Stats().Restarts != 2 {
		t.Errorf("restarts = %d", n.Stats().Restarts)
	}
	_ = n.Close()
	if err := n.Restart(false, 0); !errors.Is(err, ErrClosed) {
		t.Errorf("restart after close: %v", err)
	}
}

func TestClockOffsetAndDrift(t *testing.T) {
	n := startNode(t, Config{SweepInterval: time.Hour})
	c := dial(t, n.Addr())
	c.do("SET", "k", "v", "PX", "10000")
	n.SetClock(11*time.Second, 0)
	eqReply(t, "expired by offset", c.do("GET", "k"), nullBulk)
	c.do("SET", "k", "v", "EX", "100")
	if ttl := n.PTTL("k"); ttl < 99*time.Second || ttl > 100*time.Second {
		t.Errorf("PTTL with offset = %v", ttl)
	}
	n.SetClock(-time.Hour, 0) // going back in time extends the key
	if ttl := n.PTTL("k"); ttl < time.Hour {
		t.Errorf("PTTL after clock moved back = %v", ttl)
	}
	n.SetClock(0, 9) // node clock runs 10x fast
	c.do("SET", "d", "v", "PX", "1000")
	time.Sleep(150 * time.Millisecond)
	eqReply(t, "expired by drift", c.do("GET", "d"), nullBulk)
	n.ClearFaults()
	c.do("SET", "d", "v", "PX", "1000")
	time.Sleep(150 * time.Millisecond)
	eqReply(t, "normal clock", c.do("GET", "d"), bulk("v"))
}

func TestFailNextAndMalform(t *testing.T) {
	n := startNode(t, Config{})
	c := dial(t, n.Addr())
	n.FailNext(2, "ERR injected")
	eqReply(t, "fail 1", c.do("SET", "k", "v"), errReply("ERR injected"))
	eqReply(t, "fake not failed", c.do("FAKE", "HEAL"), okReply)
	eqReply(t, "fail 2", c.do("GET", "k"), errReply("ERR injected"))
	eqReply(t, "not executed", c.do("GET", "k"), nullBulk)
	n.MalformNext(1)
	c.send("PING")
	line, err := c.r.ReadString('\n')
	if err != nil || line[0] != '?' {
		t.Fatalf("malformed reply = %q, %v", line, err)
	}
	eqReply(t, "after malform", c.do("PING"), pongReply)
	n.FailNext(5, "ERR x")
	n.MalformNext(5)
	n.SetLatency(time.Second, 0)
	n.Blackhole()
	n.ClearFaults()
	eqReply(t, "cleared", c.do("PING"), pongReply)
}

func TestAdminCommand(t *testing.T) {
	n := startNode(t, Config{})
	c := dial(t, n.Addr())
	help := c.do("FAKE", "HELP")
	if !hasPrefix(help, fmt.Sprintf("*%d\r\n+FAKE <subcommand>", len(adminHelp()))) {
		t.Errorf("help = %.60q", help)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"FAKE", "BOGUS"}, "-ERR unknown FAKE subcommand 'BOGUS'. Try FAKE HELP.\r\n"},
		{[]string{"FAKE"}, "-ERR wrong number of arguments for 'fake' command\r\n"},
		{[]string{"FAKE", "LATENCY", "abc"}, "-ERR FAKE LATENCY: invalid duration 'abc' (want e.g. 10ms, 2s or milliseconds)\r\n"},
		{[]string{"FAKE", "LATENCY"}, "-ERR FAKE LATENCY: usage: FAKE LATENCY <fixed> [<jitter>]\r\n"},
		{[]string{"FAKE", "DOWN", "1s", "2s"}, "-ERR FAKE DOWN: usage: FAKE DOWN [<duration>]\r\n"},
		{[]string{"FAKE", "BLACKHOLE", "abc"}, "-ERR FAKE BLACKHOLE: invalid duration 'abc' (want e.g. 10ms, 2s or milliseconds)\r\n"},
		{[]string{"FAKE", "LATENCY", "-5ms"}, "-ERR FAKE LATENCY: durations must not be negative\r\n"},
		{[]string{"FAKE", "CLOCK", "1s", "x"}, "-ERR FAKE CLOCK: invalid drift rate 'x' (a float > -1, e.g. 0.01)\r\n"},
		{[]string{"FAKE", "FAILNEXT", "x", "ERR a"}, "-ERR FAKE FAILNEXT: invalid count 'x'\r\n"},
		{[]string{"FAKE", "MALFORM"}, "-ERR FAKE MALFORM: usage: FAKE MALFORM <k>\r\n"},
		{[]string{"FAKE", "HEAL", "x"}, "-ERR FAKE HEAL: takes no arguments\r\n"},
		{[]string{"FAKE", "RESTART", "LOSE", "x"}, "-ERR FAKE RESTART: invalid delay 'x' (want e.g. 10ms, 2s or milliseconds)\r\n"},
		{[]string{"FAKE", "RESTART", "x", "y", "z"}, "-ERR FAKE RESTART: usage: FAKE RESTART [LOSE|KEEP] [<delay>]\r\n"},
		{[]string{"FAKE", "FAILNEXT", "1"}, "-ERR FAKE FAILNEXT: usage: FAKE FAILNEXT <k> <error text ...>\r\n"},
	} {
		eqReply(t, fmt.Sprint(tc.args), c.do(tc.args...), tc.want)
	}
	eqReply(t, "latency", c.do("fake", "latency", "60ms", "1ms"), okReply)
	if f, j := n.latency(); f != 60*time.Millisecond || j != time.Millisecond {
		t.Errorf("latency = %v %v", f, j)
	}
	start := time.Now()
	eqReply(t, "slow ping", c.do("PING"), pongReply)
	if d := time.Since(start); d < 60*time.Millisecond {
		t.Errorf("ping took %v under 60ms latency", d)
	}
	eqReply(t, "clear", c.do("FAKE", "CLEAR"), okReply)
	eqReply(t, "failnext", c.do("FAKE", "FAILNEXT", "1", "ERR", "boom", "now"), okReply)
	eqReply(t, "failed", c.do("PING"), errReply("ERR boom now"))
	eqReply(t, "malform", c.do("FAKE", "MALFORM", "1"), okReply)
	c.send("GET", "x")
	if r, _ := c.r.ReadString('\n'); r != string(malformedReply) {
		t.Errorf("malformed = %q", r)
	}
	eqReply(t, "clock", c.do("FAKE", "CLOCK", "-2s", "0.5"), okReply)
	eqReply(t, "clock ms", c.do("FAKE", "CLOCK", "100"), okReply)
	eqReply(t, "set", c.do("SET", "k", "v"), okReply)

	// DOWN with a duration: this connection is dropped too, the node comes back.
	eqReply(t, "down", c.do("FAKE", "DOWN", "300ms"), okReply)
	if _, err := c.tryRead(2 * time.Second); err == nil {
		t.Error("admin connection survived FAKE DOWN")
	}
	// Wait on the node itself: while it is down its port is free, and on a
	// busy machine another process may briefly hold it.
	deadline := time.Now().Add(3 * time.Second)
	for n.IsDown() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	c = dial(t, n.Addr())
	eqReply(t, "back up, data kept", c.do("GET", "k"), bulk("v"))

	eqReply(t, "restart lose", c.do("FAKE", "RESTART", "LOSE", "100ms"), okReply)
	if _, err := c.tryRead(2 * time.Second); err == nil {
		t.Error("admin connection survived FAKE RESTART")
	}
	deadline = time.Now().Add(3 * time.Second)
	for (n.IsDown() || n.Stats().Restarts == 0) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	c = dial(t, n.Addr())
	eqReply(t, "data lost", c.do("GET", "k"), nullBulk)
}

func TestAdminDisabled(t *testing.T) {
	n := startNode(t, Config{DisableAdmin: true})
	c := dial(t, n.Addr())
	eqReply(t, "fake", c.do("FAKE", "DOWN"), errReply("ERR unknown command 'FAKE', with args beginning with: 'DOWN' "))
	eqReply(t, "command info", c.do("COMMAND", "INFO", "fake"), "*1\r\n*-1\r\n")
	eqReply(t, "command count", c.do("COMMAND", "COUNT"), integer(int64(len(commandTable)-1)))
	eqReply(t, "still up", c.do("PING"), pongReply)
}

// TestConcurrentClientsAndFaults is for the race detector: clients and
// fault injection run together; afterwards the node serves normally.
func TestConcurrentClientsAndFaults(t *testing.T) {
	n := startNode(t, Config{SweepInterval: 5 * time.Millisecond})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			key := "lock" + strconv.Itoa(w)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				c, err := net.DialTimeout("tcp", n.Addr(), 200*time.Millisecond)
				if err != nil {
					time.Sleep(5 * time.Millisecond)
					continue
				}
				tc := &tconn{t: t, c: c, r: newReader(c)}
				val := strconv.Itoa(i)
				for j := 0; j < 20; j++ {
					_, _ = c.Write(append(enc("SET", key, val, "NX", "PX", "50"), enc("EVALSHA", scripts.Release.SHA, "1", key, val)...))
					if _, err := tc.tryRead(300 * time.Millisecond); err != nil {
						break
					}
					if _, err := tc.tryRead(300 * time.Millisecond); err != nil {
						break
					}
					_, _ = c.Write(enc("EVAL", scripts.Extend.Text, "1", key, val, "100"))
					if _, err := tc.tryRead(300 * time.Millisecond); err != nil {
						break
					}
				}
				c.Close()
			}
		}(w)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			switch i % 9 {
			case 0:
				n.SetLatency(time.Millisecond, time.Millisecond)
			case 1:
				n.Blackhole()
			case 2:
				n.Heal()
			case 3:
				n.FailNext(2, "ERR injected")
			case 4:
				n.MalformNext(1)
			case 5:
				n.SetClock(time.Duration(i)*time.Millisecond, 0.1)
			case 6:
				if err := n.Restart(i%2 == 0, 5*time.Millisecond); err != nil {
					errs <- err
				}
			case 7:
				n.Down()
				n.Up()
			case 8:
				n.ClearFaults()
				_ = n.Stats()
				_ = n.DBSize()
				_, _ = n.Get("lock1")
				_ = n.PTTL("lock1")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	time.Sleep(1500 * time.Millisecond)
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	n.ClearFaults()
	n.Up()
	c := dial(t, n.Addr())
	eqReply(t, "serves after chaos", c.do("SET", "final", "1"), okReply)
	if n.Stats().Commands == 0 {
		t.Error("no commands ran")
	}
}

func TestBlackholeHeldRequestsFate(t *testing.T) {
	n := startNode(t, Config{})
	n.Blackhole()
	a := dial(t, n.Addr())
	a.send("SET", "closed-client", "1")
	time.Sleep(50 * time.Millisecond)
	_ = a.c.Close() // the client gives up during the partition
	b := dial(t, n.Addr())
	b.send("SET", "dropped", "1")
	time.Sleep(50 * time.Millisecond)
	n.Down() // connections dropped during the blackhole lose their requests
	n.Heal()
	n.Up()
	time.Sleep(200 * time.Millisecond) // give a wrongly released request time to run
	if _, ok := n.Get("closed-client"); ok {
		t.Error("request of a connection dropped by Down was executed")
	}
	if _, ok := n.Get("dropped"); ok {
		t.Error("request of a connection dropped by Down was executed")
	}

	n.Blackhole()
	c := dial(t, n.Addr())
	c.send("SET", "late", "1")
	time.Sleep(50 * time.Millisecond)
	_ = c.c.Close()
	n.Heal()
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if _, ok := n.Get("late"); ok {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, ok := n.Get("late"); !ok {
		t.Error("request held in the blackhole was not executed after Heal (client had closed)")
	}
}
