package mux_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redmux/redmux/fakeserver"
	"github.com/redmux/redmux/mux"
	"github.com/redmux/redmux/redlock/scripts"
	"github.com/redmux/redmux/resp"
)

// Acquire and release a lock on 5 nodes: one SET NX PX broadcast decided
// at quorum, then one EVALSHA broadcast.
func Example() {
	cl, _ := fakeserver.StartCluster(5, fakeserver.Config{})
	defer cl.Close()
	c, err := mux.New(mux.Config{
		Addrs:   cl.Addrs(),
		Scripts: []mux.Script{{Text: scripts.Release.Text, SHA: scripts.Release.SHA}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	b := c.NewBatch()
	val := "unique-value-0001"
	b.Broadcast(resp.AppendCommand(b.Scratch(), "SET", "lock:example", val, "NX", "PX", "30000"))
	out, err := c.Do(context.Background(), b, mux.Policy{Quorum: c.N()/2 + 1, Success: mux.ReplyOK, Timeout: time.Second})
	fmt.Println("acquired:", err == nil && out.Successes >= 3, "decided:", out.Decided)

	b.Reset()
	b.Broadcast(resp.AppendCommand(b.Scratch(), "EVALSHA", scripts.Release.SHA, "1", "lock:example", val))
	out, err = c.Do(context.Background(), b, mux.Policy{Success: mux.ReplyOne, Timeout: time.Second})
	fmt.Println("released on", out.Successes, "nodes", err)
	// Output:
	// acquired: true decided: true
	// released on 5 nodes <nil>
}

// Per-node results: a reply, a server error, or a node error.
func ExampleBatch_Reply() {
	cl, _ := fakeserver.StartCluster(2, fakeserver.Config{})
	defer cl.Close()
	c, _ := mux.New(mux.Config{Addrs: cl.Addrs()})
	defer c.Close()

	b := c.NewBatch()
	b.Add(0, resp.AppendCommand(nil, "SET", "k", "v"))
	b.Add(0, resp.AppendCommand(nil, "GET", "k"))
	b.Add(1, resp.AppendCommand(nil, "INCR", "k"))
	b.Add(1, resp.AppendCommand(nil, "SET", "k", "x"))
	b.Add(1, resp.AppendCommand(nil, "INCR", "k"))
	out, _ := c.Do(context.Background(), b, mux.Policy{Timeout: time.Second})
	r, _ := b.Last(0)
	fmt.Println("node 0 GET:", string(r.Data))
	_, err := b.Last(1)
	var se *mux.ServerError
	fmt.Println("node 1 INCR is a server error:", errors.As(err, &se), errors.Is(err, mux.ErrServer))
	fmt.Println(se.Text)
	fmt.Printf("%+v\n", out)
	// Output:
	// node 0 GET: v
	// node 1 INCR is a server error: true true
	// ERR value is not an integer or out of range
	// {Successes:1 Failures:1 Pending:0 Decided:false}
}

// Read one field of each node's INFO reply, in either protocol's form,
// without allocating.
func ExampleInfoField() {
	cl, _ := fakeserver.StartCluster(3, fakeserver.Config{})
	defer cl.Close()
	c, _ := mux.New(mux.Config{Addrs: cl.Addrs()})
	defer c.Close()

	b := c.NewBatch()
	b.Broadcast(resp.AppendCommand(nil, "INFO", "replication"))
	_, _ = c.Do(context.Background(), b, mux.Policy{Timeout: time.Second})
	for i := 0; i < b.N(); i++ {
		r, _ := b.Last(i)
		role, ok := mux.InfoField(r, "role")
		fmt.Println(i, string(role), ok)
	}
	// Output:
	// 0 master true
	// 1 master true
	// 2 master true
}

// A node nobody listens on: New succeeds, the node fails at once with
// ErrNodeDown, and the supervisor keeps redialling it in the background.
func ExampleNew() {
	cl, _ := fakeserver.StartCluster(2, fakeserver.Config{})
	defer cl.Close()
	c, err := mux.New(mux.Config{Addrs: append(cl.Addrs(), "127.0.0.1:1")})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	b := c.NewBatch()
	b.Broadcast(resp.AppendCommand(nil, "PING"))
	out, _ := c.Do(context.Background(), b, mux.Policy{Quorum: 2})
	fmt.Println(out.Successes, errors.Is(b.Err(2), mux.ErrNodeDown), c.NodeUp(2))

	_, err = mux.New(mux.Config{})
	fmt.Println(errors.Is(err, mux.ErrConfig))
	// Output:
	// 2 true false
	// true
}

// Ask for the io_uring transport: one system call submits a lone
// caller's commands and waits for their replies. Where the kernel or a
// policy refuses io_uring, the client runs on epoll and Transport says
// why, so the output depends on the machine: "io_uring", or "epoll
// (io_uring refused: ...)".
func ExampleConfig_transport() {
	cl, _ := fakeserver.StartCluster(3, fakeserver.Config{})
	defer cl.Close()
	c, err := mux.New(mux.Config{Addrs: cl.Addrs(), Transport: mux.TransportIOURing})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	fmt.Println("transport:", c.Transport())
	b := c.NewBatch()
	b.Broadcast(resp.AppendCommand(b.Scratch(), "PING"))
	out, err := c.Do(context.Background(), b, mux.Policy{})
	fmt.Println("answered:", out.Successes, err)
}

// A node says on the connection itself when its data set is flushed or
// replaced (Config.WatchFlushes): the next reply comes after it.
func ExampleClient_LastFlush() {
	cl, _ := fakeserver.StartCluster(1, fakeserver.Config{})
	defer cl.Close()
	c, _ := mux.New(mux.Config{Addrs: cl.Addrs(), Incarnations: true, WatchFlushes: true, Conns: 1})
	defer c.Close()
	set := func() {
		b := c.NewBatch()
		b.Add(0, resp.AppendCommand(nil, "SET", "k", "v"))
		_, _ = c.Do(context.Background(), b, mux.Policy{Timeout: time.Second})
	}
	set()
	fmt.Println("watched:", c.Incarnation(0).WatchesFlushes, "flushes:", c.LastFlush(0))
	cl.Nodes[0].Flush() // FLUSHALL, connections kept
	set()
	fmt.Println("flushes read:", c.LastFlush(0).N)
	// Output:
	// watched: true flushes: <nil>
	// flushes read: 1
}
