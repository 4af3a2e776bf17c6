package fakeserver_test

import (
	"bufio"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/redmux/redmux/fakeserver"
)

func ExampleStartNode() {
	n, err := fakeserver.StartNode(fakeserver.Config{})
	if err != nil {
		panic(err)
	}
	defer n.Close()
	c, err := net.Dial("tcp", n.Addr())
	if err != nil {
		panic(err)
	}
	defer c.Close()
	fmt.Fprint(c, "*6\r\n$3\r\nSET\r\n$4\r\nlock\r\n$3\r\ntok\r\n$2\r\nNX\r\n$2\r\nPX\r\n$4\r\n5000\r\n")
	line, _ := bufio.NewReader(c).ReadString('\n')
	fmt.Printf("%q\n", line)
	v, _ := n.Get("lock")
	fmt.Println(string(v), n.PTTL("lock") > 4*time.Second)
	// Output:
	// "+OK\r\n"
	// tok true
}

func ExampleStartCluster() {
	cl, err := fakeserver.StartCluster(3, fakeserver.Config{})
	if err != nil {
		panic(err)
	}
	defer cl.Close()
	fmt.Println(len(cl.Addrs()))
	// Output: 3
}

func ExampleNode_Blackhole() {
	n, _ := fakeserver.StartNode(fakeserver.Config{})
	defer n.Close()
	c, _ := net.Dial("tcp", n.Addr())
	defer c.Close()
	r := bufio.NewReader(c)
	n.Blackhole()
	fmt.Fprint(c, "PING\r\n")
	_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	_, err := r.ReadString('\n')
	fmt.Println("answered during blackhole:", err == nil)
	n.Heal()
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	line, _ := r.ReadString('\n')
	fmt.Printf("after heal: %q\n", line)
	// Output:
	// answered during blackhole: false
	// after heal: "+PONG\r\n"
}

func ExampleNode_Restart() {
	n, _ := fakeserver.StartNode(fakeserver.Config{})
	defer n.Close()
	c, _ := net.Dial("tcp", n.Addr())
	fmt.Fprint(c, "SET k v\r\n")
	_, _ = bufio.NewReader(c).ReadString('\n')
	c.Close()
	_ = n.Restart(true, 50*time.Millisecond) // lose data, away for 50ms
	_, ok := n.Get("k")
	fmt.Println("key survived:", ok, "restarts:", n.Stats().Restarts)
	// Output: key survived: false restarts: 1
}

func ExampleNode_SetClock() {
	n, _ := fakeserver.StartNode(fakeserver.Config{})
	defer n.Close()
	c, _ := net.Dial("tcp", n.Addr())
	defer c.Close()
	fmt.Fprint(c, "SET k v PX 10000\r\n")
	_, _ = bufio.NewReader(c).ReadString('\n')
	n.SetClock(time.Minute, 0) // the node's clock jumps a minute ahead
	_, ok := n.Get("k")
	fmt.Println("alive:", ok, "pttl:", n.PTTL("k"))
	// Output: alive: false pttl: -2ns
}

func ExampleNode_FailNext() {
	n, _ := fakeserver.StartNode(fakeserver.Config{})
	defer n.Close()
	c, _ := net.Dial("tcp", n.Addr())
	defer c.Close()
	r := bufio.NewReader(c)
	n.FailNext(1, "ERR injected failure")
	fmt.Fprint(c, "PING\r\nPING\r\n")
	a, _ := r.ReadString('\n')
	b, _ := r.ReadString('\n')
	fmt.Printf("%q %q\n", a, b)
	// Output: "-ERR injected failure\r\n" "+PONG\r\n"
}

func ExampleNode_SetLatency() {
	n, _ := fakeserver.StartNode(fakeserver.Config{})
	defer n.Close()
	c, _ := net.Dial("tcp", n.Addr())
	defer c.Close()
	n.SetLatency(50*time.Millisecond, 0)
	start := time.Now()
	fmt.Fprint(c, "PING\r\n")
	line, _ := bufio.NewReader(c).ReadString('\n')
	fmt.Printf("%q delayed: %v\n", line, time.Since(start) >= 50*time.Millisecond)
	// Output: "+PONG\r\n" delayed: true
}

func ExampleNode_Down() {
	n, _ := fakeserver.StartNode(fakeserver.Config{})
	defer n.Close()
	n.Down()
	_, err := net.DialTimeout("tcp", n.Addr(), time.Second)
	fmt.Println("refused while down:", err != nil)
	n.Up()
	c, err := net.DialTimeout("tcp", n.Addr(), time.Second)
	fmt.Println("accepted after up:", err == nil)
	if err == nil {
		c.Close()
	}
	// Output:
	// refused while down: true
	// accepted after up: true
}

// The FAKE admin command drives the same faults over RESP, e.g. from
// redis-cli: redis-cli -p PORT fake latency 10ms 2ms.
func Example_adminCommand() {
	n, _ := fakeserver.StartNode(fakeserver.Config{})
	defer n.Close()
	c, _ := net.Dial("tcp", n.Addr())
	defer c.Close()
	r := bufio.NewReader(c)
	for _, cmd := range []string{"FAKE FAILNEXT 1 ERR injected", "GET k", "FAKE BOGUS"} {
		fmt.Fprint(c, cmd+"\r\n")
		line, _ := r.ReadString('\n')
		fmt.Printf("%s -> %q\n", cmd, line)
	}
	// Output:
	// FAKE FAILNEXT 1 ERR injected -> "+OK\r\n"
	// GET k -> "-ERR injected\r\n"
	// FAKE BOGUS -> "-ERR unknown FAKE subcommand 'BOGUS'. Try FAKE HELP.\r\n"
}

func ExampleNode_Partition() {
	n, _ := fakeserver.StartNode(fakeserver.Config{})
	defer n.Close()
	c, _ := net.Dial("tcp", n.Addr())
	defer c.Close()
	// Replies dropped: the SET runs, the client never hears OK.
	n.Partition(fakeserver.Replies)
	fmt.Fprint(c, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n")
	_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	_, err := bufio.NewReader(c).ReadString('\n')
	v, _ := n.Get("k")
	fmt.Println("answered:", err == nil, "applied:", string(v))
	// Ending it closes the connection that lost a reply.
	n.Partition(fakeserver.NoPartition)
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	_, err = c.Read(make([]byte, 1))
	fmt.Println("connection closed:", err != nil)
	// Output:
	// answered: false applied: v
	// connection closed: true
}

func ExampleNode_SetRequestDelay() {
	n, _ := fakeserver.StartNode(fakeserver.Config{})
	defer n.Close()
	c, _ := net.Dial("tcp", n.Addr())
	defer c.Close()
	n.SetRequestDelay(200*time.Millisecond, 0) // the SET runs late
	fmt.Fprint(c, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n")
	time.Sleep(50 * time.Millisecond)
	_, early := n.Get("k")
	line, _ := bufio.NewReader(c).ReadString('\n')
	_, late := n.Get("k")
	fmt.Printf("applied early: %v, reply %q, applied: %v\n", early, line, late)
	// Output: applied early: false, reply "+OK\r\n", applied: true
}

// Seeding, inspecting and time travel from a Go test: RunT closes the
// cluster when the test ends.
func ExampleRunT() {
	t := &testing.T{} // in a real test, the *testing.T it is given
	cl := fakeserver.RunT(t, 3)
	n := cl.Nodes[0]
	n.Set("lock", "token", 10*time.Second)
	v, _ := n.Get("lock")
	fmt.Println(string(v), n.Keys(), n.TTL("lock") > 9*time.Second)
	cl.FastForward(11 * time.Second) // the lock expires on every node
	_, ok := n.Get("lock")
	fmt.Println(ok, n.TTL("lock"))
	_ = cl.Close()
	// Output:
	// token [lock] true
	// false -2ns
}
