package mux

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/redmux/redmux/fakeserver"
	"github.com/redmux/redmux/internal/nodeaddr"
)

// A Redis Cluster node whose first-listed shard primary is dead (refuses)
// or blackholed (accepts, never answers): the healthy shard's keys are
// served all the same, at New and after the healthy shard's connection
// drops once; only the dead shard's keys fail (issue 46: 0 ok calls to the
// healthy shard, because New and the redial loop stopped at the first
// failed dial).
func TestClusterDeadShard(t *testing.T) {
	for _, fault := range []string{"down", "blackhole"} {
		for _, when := range []string{"at New", "in operation"} {
			t.Run(fault+" "+when, func(t *testing.T) { testClusterDeadShard(t, fault, when == "at New") })
		}
	}
}

func testClusterDeadShard(t *testing.T, fault string, atNew bool) {
	cl, err := fakeserver.StartShardedCluster(2, fakeserver.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	dead, healthy := cl.Nodes[0], cl.Nodes[1]
	kill := func() {
		if fault == "down" {
			dead.Down()
		} else {
			dead.Blackhole()
		}
	}
	if atNew {
		kill()
	}
	a := cl.Addrs()
	c, err := New(Config{
		Addrs:        []string{nodeaddr.ClusterScheme + "://" + a[0] + "?seed=" + a[1]},
		DialTimeout:  300 * time.Millisecond,
		Timeout:      300 * time.Millisecond,
		ReconnectMin: 10 * time.Millisecond,
		ReconnectMax: 100 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// a key of each shard (the fake's shard k serves the k-th half)
	var deadKey, okKey string
	for k := 0; deadKey == "" || okKey == ""; k++ {
		key := "shard:" + strconv.Itoa(k)
		if KeySlot(key) < ClusterSlots/2 {
			deadKey = key
		} else {
			okKey = key
		}
	}
	b := c.NewBatch()
	if !atNew {
		if err := clusterSet(c, b, deadKey, "v"); err != nil {
			t.Fatalf("both shards up: %v", err)
		}
		kill()
	}
	healthyServes := func(when string) {
		t.Helper()
		var err error
		for try := 0; try < 100; try++ { // bounded: each try waits for a reply or Timeout
			if err = clusterSet(c, b, okKey, "v"); err == nil {
				if v, _ := healthy.Get(okKey); string(v) != "v" {
					t.Fatalf("%s: the healthy shard's key is %q", when, v)
				}
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("%s: the healthy shard's key never served: %v", when, err)
	}
	healthyServes("with one shard dead")
	if err := clusterSet(c, b, deadKey, "v"); err == nil {
		t.Fatalf("the dead shard's key was served")
	} else if !errors.Is(err, ErrNodeDown) && !errors.Is(err, ErrTimeout) && !errors.Is(err, ErrConnBroken) {
		t.Fatalf("the dead shard's key: %v", err)
	}
	// the healthy shard's connection drops once while the dead one stays dead
	healthy.Down()
	healthy.Up()
	healthyServes("after the healthy shard's connection dropped")

	// the dead shard comes back: its keys are served again
	if fault == "down" {
		dead.Up()
	} else {
		dead.Heal()
	}
	var last error
	for try := 0; try < 100; try++ {
		if last = clusterSet(c, b, deadKey, "w"); last == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if last != nil {
		t.Fatalf("the shard that came back: %v", last)
	}
}
