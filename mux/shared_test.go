package mux

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redmux/redmux/fakeserver"
	"github.com/redmux/redmux/resp"
)

// Shared commands (Batch.AddShared): concurrent batches on one connection
// share one, sent after every command of theirs that came before it; each
// gets the reply, which therefore reads what its own commands wrote.
func TestSharedCommandAfterEveryWrite(t *testing.T) {
	cl := startFake(t, 1, fakeserver.Config{})
	c := newTestClient(t, cl.Addrs(), func(cfg *Config) { cfg.Conns = 1 })
	counter := uniqueKey("shared-ctr")
	get := resp.AppendCommand(nil, "GET", counter)
	exists := resp.AppendCommand(nil, "EXISTS", counter)
	before := cmdCalls(t, cl.Addrs()[0], "get")
	const workers, rounds = 32, 50
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for g := 0; g < workers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := c.NewBatch()
			for r := 0; r < rounds; r++ {
				b.Reset()
				b.Add(0, resp.AppendCommand(nil, "INCR", counter))
				b.AddShared(0, get, ExpectBulk)
				// some batches subscribe twice to one group (the same
				// command again), some to a second group as well
				if g%2 == 1 {
					b.AddShared(0, get, ExpectBulk)
				}
				if g%3 == 0 {
					b.AddShared(0, exists, ExpectInt)
				}
				if _, err := c.Do(context.Background(), b, Policy{Timeout: 5 * time.Second}); err != nil {
					errs <- err
					return
				}
				incr, err1 := b.Reply(0, 0)
				read, err2 := b.Reply(0, 1)
				if err1 != nil || err2 != nil {
					errs <- errors.Join(err1, err2)
					return
				}
				k := 2
				if g%2 == 1 { // the same group's reply again
					r, err := b.Reply(0, k)
					if err != nil || string(r.Raw) != string(read.Raw) {
						errs <- errors.Join(err, errors.New("the second subscription got "+string(r.Raw)+", the first "+string(read.Raw)))
						return
					}
					k++
				}
				if g%3 == 0 { // the second group's
					r, err := b.Reply(0, k)
					if err != nil || r.Type != resp.TypeInteger || r.N != 1 {
						errs <- errors.Join(err, errors.New("the EXISTS got "+string(r.Raw)))
						return
					}
				}
				v, _ := strconv.ParseInt(string(read.Data), 10, 64)
				if v < incr.N {
					errs <- errors.New("the shared GET read " + string(read.Data) + ", before the batch's own INCR (" + strconv.FormatInt(incr.N, 10) + ")")
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	sent := cmdCalls(t, cl.Addrs()[0], "get") - before
	t.Logf("%d batches, %d shared GETs sent", workers*rounds, sent)
	if sent >= workers*rounds {
		t.Fatalf("%d GETs for %d batches: nothing was shared", sent, workers*rounds)
	}
}

// cmdCalls is INFO commandstats' count of name on the node at addr.
func cmdCalls(t *testing.T, addr, name string) int {
	t.Helper()
	c := newTestClient(t, []string{addr}, nil)
	b, _ := broadcast(t, c, Policy{}, "INFO", "commandstats")
	r, err := b.Last(0)
	if err != nil {
		t.Fatal(err)
	}
	text := string(r.Data)
	if r.Type == resp.TypeVerbatim {
		text = string(r.VerbatimText())
	}
	key := "cmdstat_" + name + ":calls="
	for i := 0; i+len(key) <= len(text); i++ {
		if text[i:i+len(key)] == key {
			j := i + len(key)
			k := j
			for k < len(text) && text[k] >= '0' && text[k] <= '9' {
				k++
			}
			n, _ := strconv.Atoi(text[j:k])
			return n
		}
	}
	return 0
}

// A shared command must be a node's last: an Add after it is a bad batch;
// a batch whose only command for a node is shared is sent all the same.
func TestSharedCommandRules(t *testing.T) {
	cl := startFake(t, 2, fakeserver.Config{})
	c := newTestClient(t, cl.Addrs(), nil)
	b := c.NewBatch()
	b.AddShared(0, resp.AppendCommand(nil, "PING"), 0)
	b.Add(0, resp.AppendCommand(nil, "PING"))
	if _, err := c.Do(context.Background(), b, Policy{}); !errors.Is(err, ErrBadBatch) {
		t.Fatalf("an Add after AddShared: %v, want ErrBadBatch", err)
	}
	b.Reset()
	b.BroadcastShared(resp.AppendCommand(nil, "PING"), ExpectSimple)
	out, err := c.Do(context.Background(), b, Policy{Success: isAny})
	if err != nil || out.Successes != 2 {
		t.Fatalf("shared-only batch: %+v %v", out, err)
	}
	b.Reset()
	b.AddShared(0, []byte("*0\r\n"), 0)
	if _, err := c.Do(context.Background(), b, Policy{}); !errors.Is(err, ErrBadBatch) {
		t.Fatalf("a shared command that is not one request: %v", err)
	}
}

func isAny(int, resp.Reply) bool { return true }

// A connection that breaks with shared commands queued or on their way
// fails every batch that subscribed, at once; later calls work.
func TestSharedCommandConnectionBreaks(t *testing.T) {
	cl := startFake(t, 1, fakeserver.Config{})
	c := newTestClient(t, cl.Addrs(), func(cfg *Config) { cfg.Conns = 1 })
	cl.Nodes[0].Blackhole()
	var wg sync.WaitGroup
	results := make(chan error, 16)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := c.NewBatch()
			b.Add(0, resp.AppendCommand(nil, "SET", uniqueKey("brk"), "v"))
			b.AddShared(0, resp.AppendCommand(nil, "GET", "brk-shared"), ExpectBulk|ExpectNil)
			_, err := c.Do(context.Background(), b, Policy{Timeout: 2 * time.Second})
			if err == nil {
				err = b.Err(0)
			}
			results <- err
		}()
	}
	time.Sleep(100 * time.Millisecond)
	cl.Nodes[0].Down() // the connection breaks under the queued commands
	wg.Wait()
	close(results)
	for err := range results {
		if err == nil {
			t.Fatal("a batch on a broken connection succeeded")
		}
	}
	cl.Nodes[0].Up()
	cl.Nodes[0].Heal()
	end := time.Now().Add(5 * time.Second)
	for {
		b := c.NewBatch()
		b.Add(0, resp.AppendCommand(nil, "SET", uniqueKey("brk"), "v"))
		b.AddShared(0, resp.AppendCommand(nil, "GET", "brk-shared"), ExpectBulk|ExpectNil)
		if _, err := c.Do(context.Background(), b, Policy{Timeout: time.Second}); err == nil && b.Err(0) == nil {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("no call worked after the node came back: %v", b.Err(0))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
