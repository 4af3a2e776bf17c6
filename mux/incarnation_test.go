package mux

import (
	"context"
	"testing"
	"time"

	"github.com/redmux/redmux/fakeserver"
	"github.com/redmux/redmux/resp"
)

// INFO's two forms (RESP2 bulk, RESP3 verbatim) and a refusal.
func TestLearnInfo(t *testing.T) {
	server := "# Server\r\nredis_version:7.0.15\r\nrun_id:abc123\r\nuptime_in_seconds:42\r\n"
	repl := "# Replication\r\nrole:master\r\nmaster_replid:r1\r\nmaster_replid2:r0\r\nsecond_repl_offset:17\r\n"
	for _, form := range []string{"bulk", "verbatim"} {
		var inc Incarnation
		enc := func(s string) resp.Reply {
			var b []byte
			if form == "bulk" {
				b = resp.AppendBulkString(nil, s)
			} else {
				b = resp.AppendVerbatim(nil, "txt", []byte(s))
			}
			r, _, err := resp.Parse(b)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		learnInfo(&inc, infoServer, enc(server))
		learnInfo(&inc, infoReplication, enc(repl))
		seen := time.Now()
		inc.finish(seen)
		want := Incarnation{Known: true, RunID: "abc123", Uptime: 42 * time.Second, Role: "master",
			ReplID: "r1", ReplID2: "r0", Promoted: true, Seen: seen}
		if inc != want {
			t.Fatalf("%s: %+v, want %+v", form, inc, want)
		}
		if !inc.Start().Equal(seen.Add(-42 * time.Second)) {
			t.Fatalf("Start %v", inc.Start())
		}
	}
	// uptimes a Duration cannot hold stay 0 ("just started"), never negative
	for up, want := range map[string]time.Duration{
		"9223372036": 9223372036 * time.Second, "9223372037": 0, "99999999999999999999": 0, "-5": 0, "12x": 0,
	} {
		var inc Incarnation
		r, _, _ := resp.Parse(resp.AppendBulkString(nil, "# Server\r\nrun_id:r\r\nuptime_in_seconds:"+up+"\r\n"))
		learnInfo(&inc, infoServer, r)
		if inc.Uptime != want {
			t.Errorf("uptime_in_seconds:%s read as %v, want %v", up, inc.Uptime, want)
		}
	}
	var inc Incarnation
	r, _, _ := resp.Parse([]byte("-NOPERM this user has no permissions to run the 'info' command\r\n"))
	learnInfo(&inc, infoServer, r)
	learnInfo(&inc, infoReplication, r)
	inc.finish(time.Now())
	if inc.Known || inc.Err == "" {
		t.Fatalf("a refused INFO: %+v", inc)
	}
}

// InfoField finds a field in either form, exactly (master_replid is not
// master_replid2), on a last line without its CRLF too; an error, a null
// or a missing field is not ok. No allocation.
func TestInfoField(t *testing.T) {
	parse := func(b []byte) resp.Reply {
		r, _, err := resp.Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	text := "# Replication\r\nrole:master\r\nmaster_replid2:r0\r\nmaster_replid:r1\r\nodd line\r\nlast:x"
	for _, r := range []resp.Reply{parse(resp.AppendBulkString(nil, text)), parse(resp.AppendVerbatim(nil, "txt", []byte(text)))} {
		for field, want := range map[string]string{"master_replid": "r1", "master_replid2": "r0", "role": "master", "last": "x"} {
			if v, ok := InfoField(r, field); !ok || string(v) != want {
				t.Errorf("%s: %q %v, want %q", field, v, ok, want)
			}
		}
		for _, field := range []string{"master", "odd line", "", "# Replication"} {
			if v, ok := InfoField(r, field); ok {
				t.Errorf("%q found: %q", field, v)
			}
		}
		if a := testing.AllocsPerRun(100, func() { _, _ = InfoField(r, "master_replid") }); a != 0 {
			t.Errorf("%v allocs", a)
		}
	}
	for _, b := range []string{"-ERR master_replid:r1\r\n", "$-1\r\n", "$0\r\n\r\n"} {
		if v, ok := InfoField(parse([]byte(b)), "master_replid"); ok {
			t.Errorf("%q: %q found", b, v)
		}
	}
}

// A client with Incarnations learns every node's run_id before its
// connection carries a command, and a restart's new one on the redial; a
// node that refuses INFO is set up all the same, its incarnation unknown.
func TestIncarnationsLearnedAtSetup(t *testing.T) {
	cl := startFake(t, 3, fakeserver.Config{})
	c := newTestClient(t, cl.Addrs(), func(cfg *Config) { cfg.Incarnations = true })
	if !c.TracksIncarnations() {
		t.Fatal("TracksIncarnations false")
	}
	for i, n := range cl.Nodes {
		inc := c.Incarnation(i)
		if inc == nil || !inc.Known || inc.RunID != n.RunID() || inc.Role != "master" || inc.Promoted {
			t.Fatalf("node %d: %+v, want run_id %s", i, inc, n.RunID())
		}
		if inc.Uptime < fakeserver.DefaultStartUptime {
			t.Fatalf("node %d: uptime %v, the fake starts at %v", i, inc.Uptime, fakeserver.DefaultStartUptime)
		}
	}
	old := c.Incarnation(1)
	if err := cl.Nodes[1].Restart(true, 0); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		b := c.NewBatch()
		b.Broadcast(resp.AppendCommand(nil, "PING"))
		_, _ = c.Do(context.Background(), b, Policy{})
		if inc := c.Incarnation(1); inc != old && inc.Known && inc.RunID == cl.Nodes[1].RunID() {
			if inc.Same(old) || inc.ReplID == old.ReplID || inc.Uptime > 5*time.Second {
				t.Fatalf("after a restart losing data: %+v, before %+v", inc, old)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the restart's run_id was never learned: %+v", c.Incarnation(1))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cl.Nodes[2].Failover(0, 0); err != nil {
		t.Fatal(err)
	}
	for {
		if inc := c.Incarnation(2); inc.Known && inc.RunID == cl.Nodes[2].RunID() {
			if !inc.Promoted || inc.ReplID2 == "" {
				t.Fatalf("a failover's incarnation: %+v", inc)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the failover was never learned: %+v", c.Incarnation(2))
		}
		b := c.NewBatch()
		b.Broadcast(resp.AppendCommand(nil, "PING"))
		_, _ = c.Do(context.Background(), b, Policy{})
		time.Sleep(20 * time.Millisecond)
	}

	// Without Incarnations: nothing learned, no INFO sent.
	c2 := newTestClient(t, cl.Addrs(), nil)
	if c2.TracksIncarnations() || c2.Incarnation(0) != nil {
		t.Fatalf("Incarnations off: %v %+v", c2.TracksIncarnations(), c2.Incarnation(0))
	}
}
