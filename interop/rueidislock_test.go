package interop

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"

	"github.com/redmux/redmux/fakeserver"
)

// rueidislock is a majority-of-keys lock on one Redis (KeyMajority*2-1
// keys), so it runs on one fake node of the cluster.
func lockerOn(t *testing.T, addr string, validity time.Duration) rueidislock.Locker {
	t.Helper()
	l, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption: rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true, DisableRetry: true,
			ConnWriteTimeout: 200 * time.Millisecond, Dialer: netDialer()},
		KeyMajority: 2,
		KeyValidity: validity,
	})
	if err != nil {
		t.Fatalf("NewLocker: %v", err)
	}
	t.Cleanup(l.Close)
	return l
}

func TestRueidislockLockExtendUnlockContention(t *testing.T) {
	cl := fakeserver.RunT(t, 3)
	a, b := lockerOn(t, cl.Addrs()[0], time.Second), lockerOn(t, cl.Addrs()[0], time.Second)
	ctx, cancel, err := a.WithContext(context.Background(), "res")
	if err != nil {
		t.Fatalf("A lock: %v", err)
	}
	if keys := cl.Nodes[0].Keys(); len(keys) < 2 {
		t.Errorf("keys on the node: %q, want a majority of 3", keys)
	}
	if _, _, err := b.TryWithContext(context.Background(), "res"); !errors.Is(err, rueidislock.ErrNotLocked) {
		t.Errorf("B try while A holds it: %v, want ErrNotLocked", err)
	}
	// rueidislock extends in the background: the lock outlives its validity
	time.Sleep(1500 * time.Millisecond)
	if ctx.Err() != nil {
		t.Fatalf("A's lock lost despite extension: %v", ctx.Err())
	}
	if _, _, err := b.TryWithContext(context.Background(), "res"); !errors.Is(err, rueidislock.ErrNotLocked) {
		t.Errorf("B try after extension: %v, want ErrNotLocked", err)
	}
	cancel() // unlock
	deadline := time.Now().Add(2 * time.Second)
	for len(cl.Nodes[0].Keys()) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if keys := cl.Nodes[0].Keys(); len(keys) != 0 {
		t.Errorf("keys left after unlock: %q", keys)
	}
	_, bcancel, err := b.TryWithContext(context.Background(), "res")
	if err != nil {
		t.Fatalf("B try after A's unlock: %v", err)
	}
	bcancel()
}

func TestRueidislockNodeDown(t *testing.T) {
	cl := fakeserver.RunT(t, 1)
	l := lockerOn(t, cl.Addrs()[0], time.Second)
	cl.Nodes[0].Down()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, c, err := l.TryWithContext(ctx, "res"); err == nil {
		c()
		t.Fatal("lock on a down node succeeded")
	}
}

// A slow node: with replies 10ms late the lock is obtained (late); with
// replies later than TryNextAfter (20ms) every key attempt times out on
// the client, so WithContext never succeeds and returns when its context
// ends -- although the node applied the SETs.
func TestRueidislockSlowNode(t *testing.T) {
	cl := fakeserver.RunT(t, 1)
	l := lockerOn(t, cl.Addrs()[0], 2*time.Second)
	cl.Nodes[0].SetLatency(10*time.Millisecond, 0)
	start := time.Now()
	_, cancel, err := l.WithContext(context.Background(), "res")
	if err != nil {
		t.Fatalf("lock on a node 10ms slow: %v", err)
	}
	cancel()
	if d := time.Since(start); d < 10*time.Millisecond {
		t.Errorf("lock took %v on a node with 10ms latency", d)
	}
	cl.Nodes[0].SetLatency(100*time.Millisecond, 0)
	ctx, stop := context.WithTimeout(context.Background(), time.Second)
	defer stop()
	if _, c, err := l.WithContext(ctx, "res2"); err == nil {
		c()
		t.Fatal("lock on a node slower than TryNextAfter succeeded")
	} else if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("lock on a too-slow node: %v, want the context's deadline", err)
	}
}

// A restart that loses the keys: the next extension finds them gone and
// rueidislock cancels the lock's context, so the holder learns it lost the
// lock, and another locker can take it.
func TestRueidislockRestartLosesData(t *testing.T) {
	cl := fakeserver.RunT(t, 1)
	a, b := lockerOn(t, cl.Addrs()[0], time.Second), lockerOn(t, cl.Addrs()[0], time.Second)
	ctx, cancel, err := a.WithContext(context.Background(), "res")
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	if err := cl.Nodes[0].Restart(true, 0); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(3 * time.Second):
		t.Fatal("lock context still live 3s after the node lost the keys")
	}
	_, bcancel, err := b.WithContext(context.Background(), "res")
	if err != nil {
		t.Fatalf("B lock after the restart: %v", err)
	}
	bcancel()
}
