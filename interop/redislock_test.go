package interop

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/bsm/redislock"
	goredislib "github.com/redis/go-redis/v9"

	"github.com/redmux/redmux/fakeserver"
)

func netDialer() net.Dialer { return net.Dialer{Timeout: 200 * time.Millisecond} }

// bsm/redislock is a single-node lock: it runs on one fake node.
func redislockOn(t *testing.T, addr string) *redislock.Client {
	t.Helper()
	c := goredislib.NewClient(&goredislib.Options{Addr: addr, ReadTimeout: 100 * time.Millisecond,
		WriteTimeout: 100 * time.Millisecond, DialTimeout: 100 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	return redislock.New(c)
}

func TestRedislockLockExtendUnlockContention(t *testing.T) {
	cl := fakeserver.RunT(t, 3)
	a, b := redislockOn(t, cl.Addrs()[1]), redislockOn(t, cl.Addrs()[1])
	ctx := context.Background()
	lk, err := a.Obtain(ctx, "res", time.Second, nil)
	if err != nil {
		t.Fatalf("A obtain: %v", err)
	}
	if _, err := b.Obtain(ctx, "res", time.Second, nil); !errors.Is(err, redislock.ErrNotObtained) {
		t.Errorf("B obtain while A holds it: %v, want ErrNotObtained", err)
	}
	if err := lk.Refresh(ctx, 5*time.Second, nil); err != nil {
		t.Fatalf("A refresh: %v", err)
	}
	if ttl, err := lk.TTL(ctx); err != nil || ttl < 4900*time.Millisecond {
		t.Errorf("TTL after refresh: %v %v", ttl, err)
	}
	if err := lk.Release(ctx); err != nil {
		t.Fatalf("A release: %v", err)
	}
	if err := lk.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
		t.Errorf("second release: %v, want ErrLockNotHeld", err)
	}
	lb, err := b.Obtain(ctx, "res", time.Second, nil)
	if err != nil {
		t.Fatalf("B obtain after release: %v", err)
	}
	// expiry through the node's clock
	cl.Nodes[1].FastForward(2 * time.Second)
	if _, err := a.Obtain(ctx, "res", time.Second, nil); err != nil {
		t.Errorf("A obtain after B's lock expired: %v", err)
	}
	if err := lb.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
		t.Errorf("B release of an expired lock: %v, want ErrLockNotHeld", err)
	}
}

func TestRedislockNodeDown(t *testing.T) {
	cl := fakeserver.RunT(t, 1)
	c := redislockOn(t, cl.Addrs()[0])
	cl.Nodes[0].Down()
	_, err := c.Obtain(context.Background(), "res", time.Second, nil)
	if err == nil || errors.Is(err, redislock.ErrNotObtained) {
		t.Errorf("obtain on a down node: %v, want a connection error", err)
	}
}

// A node slower than the client's read timeout: Obtain fails with the
// timeout, not with ErrNotObtained.
func TestRedislockSlowNode(t *testing.T) {
	cl := fakeserver.RunT(t, 1)
	c := redislockOn(t, cl.Addrs()[0])
	cl.Nodes[0].SetLatency(300*time.Millisecond, 0)
	_, err := c.Obtain(context.Background(), "res", time.Second, nil)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("obtain on a slow node: %v, want a timeout", err)
	}
}

// A restart that loses the key: Refresh reports ErrNotObtained and Release
// ErrLockNotHeld; another client obtains the lock.
func TestRedislockRestartLosesData(t *testing.T) {
	cl := fakeserver.RunT(t, 1)
	a, b := redislockOn(t, cl.Addrs()[0]), redislockOn(t, cl.Addrs()[0])
	ctx := context.Background()
	lk, err := a.Obtain(ctx, "res", 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Nodes[0].Restart(true, 0); err != nil {
		t.Fatal(err)
	}
	var rerr error
	for i := 0; i < 3; i++ { // the pooled connection was dropped: the first try may see it closed
		if rerr = lk.Refresh(ctx, 5*time.Second, nil); errors.Is(rerr, redislock.ErrNotObtained) {
			break
		}
	}
	if !errors.Is(rerr, redislock.ErrNotObtained) {
		t.Errorf("refresh after data loss: %v, want ErrNotObtained", rerr)
	}
	if _, err := b.Obtain(ctx, "res", time.Second, nil); err != nil {
		t.Errorf("B obtain after data loss: %v", err)
	}
	if err := lk.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
		t.Errorf("A release after data loss: %v, want ErrLockNotHeld", err)
	}
}
