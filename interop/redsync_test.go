package interop

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredislib "github.com/redis/go-redis/v9"

	"github.com/redmux/redmux/fakeserver"
)

// redsyncOn returns a redsync instance with one go-redis pool per node.
func redsyncOn(t *testing.T, cl *fakeserver.Cluster) *redsync.Redsync {
	t.Helper()
	var pools []redis.Pool
	for _, a := range cl.Addrs() {
		c := goredislib.NewClient(&goredislib.Options{Addr: a, ReadTimeout: 100 * time.Millisecond, WriteTimeout: 100 * time.Millisecond,
			DialTimeout: 100 * time.Millisecond, MaxRetries: -1})
		t.Cleanup(func() { _ = c.Close() })
		pools = append(pools, goredis.NewPool(c))
	}
	return redsync.New(pools...)
}

func TestRedsyncLockExtendUnlockContention(t *testing.T) {
	cl := fakeserver.RunT(t, 3)
	rs := redsyncOn(t, cl)
	ctx := context.Background()
	a := rs.NewMutex("res", redsync.WithExpiry(2*time.Second), redsync.WithTries(1))
	b := rs.NewMutex("res", redsync.WithExpiry(2*time.Second), redsync.WithTries(1))
	if err := a.LockContext(ctx); err != nil {
		t.Fatalf("A lock: %v", err)
	}
	for i, n := range cl.Nodes {
		if v, ok := n.Get("res"); !ok || string(v) != a.Value() {
			t.Errorf("node %d holds %q, want A's value", i, v)
		}
	}
	var taken *redsync.ErrTaken
	if err := b.LockContext(ctx); !errors.As(err, &taken) && !errors.Is(err, redsync.ErrFailed) {
		t.Errorf("B lock while A holds it: %v, want ErrTaken/ErrFailed", err)
	}
	cl.FastForward(time.Second) // half the TTL gone on every node
	if ok, err := a.ExtendContext(ctx); !ok || err != nil {
		t.Fatalf("A extend: %v %v", ok, err)
	}
	if ttl := cl.Nodes[0].TTL("res"); ttl < 1900*time.Millisecond {
		t.Errorf("TTL after extend = %v, want ~2s", ttl)
	}
	if ok, err := b.UnlockContext(ctx); ok || err == nil {
		t.Errorf("B unlock of A's lock: %v %v, want failure", ok, err)
	}
	if ok, err := a.UnlockContext(ctx); !ok || err != nil {
		t.Fatalf("A unlock: %v %v", ok, err)
	}
	if err := b.LockContext(ctx); err != nil {
		t.Errorf("B lock after A's unlock: %v", err)
	}
	// the script's "lock already expired" branch (-1) on every node
	cl.FastForward(3 * time.Second)
	if ok, err := b.UnlockContext(ctx); ok || !errors.Is(err, redsync.ErrLockAlreadyExpired) {
		t.Errorf("unlock of an expired lock: %v %v, want ErrLockAlreadyExpired", ok, err)
	}
}

// One node of three down: redsync still gets its quorum of 2.
func TestRedsyncNodeDown(t *testing.T) {
	cl := fakeserver.RunT(t, 3)
	rs := redsyncOn(t, cl)
	ctx := context.Background()
	cl.Nodes[2].Down()
	m := rs.NewMutex("res", redsync.WithExpiry(2*time.Second), redsync.WithTries(1))
	if err := m.LockContext(ctx); err != nil {
		t.Fatalf("lock with 1 of 3 down: %v", err)
	}
	if ok, err := m.ExtendContext(ctx); !ok || err != nil {
		t.Errorf("extend with 1 of 3 down: %v %v", ok, err)
	}
	if ok, err := m.UnlockContext(ctx); !ok || err != nil {
		t.Errorf("unlock with 1 of 3 down: %v %v", ok, err)
	}
	cl.Nodes[1].Down() // 2 of 3 down: no quorum
	if err := m.LockContext(ctx); err == nil {
		t.Error("lock with 2 of 3 down succeeded")
	}
}

// A node slower than go-redis's read timeout counts as failed; the other
// two make the quorum.
func TestRedsyncSlowNode(t *testing.T) {
	cl := fakeserver.RunT(t, 3)
	rs := redsyncOn(t, cl)
	cl.Nodes[0].SetLatency(300*time.Millisecond, 0)
	m := rs.NewMutex("res", redsync.WithExpiry(2*time.Second), redsync.WithTries(1))
	if err := m.LockContext(context.Background()); err != nil {
		t.Fatalf("lock with one slow node: %v", err)
	}
}

// Two of three nodes restart and lose their data: a second client gets the
// lock while the first still believes it holds it (Redlock's known hazard
// without delayed restarts), and the first client's extend fails.
func TestRedsyncRestartLosesData(t *testing.T) {
	cl := fakeserver.RunT(t, 3)
	rs := redsyncOn(t, cl)
	ctx := context.Background()
	a := rs.NewMutex("res", redsync.WithExpiry(5*time.Second), redsync.WithTries(1))
	b := rs.NewMutex("res", redsync.WithExpiry(5*time.Second), redsync.WithTries(1))
	if err := a.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cl.Nodes[0].Restart(true, 0); err != nil {
		t.Fatal(err)
	}
	if err := b.LockContext(ctx); err == nil {
		t.Fatal("B locked with only one node restarted")
	}
	if err := cl.Nodes[1].Restart(true, 0); err != nil {
		t.Fatal(err)
	}
	if err := b.LockContext(ctx); err != nil {
		t.Fatalf("B lock after 2 of 3 nodes lost the key: %v", err)
	}
	if ok, err := a.ExtendContext(ctx); ok || err == nil {
		t.Errorf("A extend after losing the lock: %v %v, want failure", ok, err)
	}
}
