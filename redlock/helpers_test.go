package redlock_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redmux/redmux/fakeserver"
	"github.com/redmux/redmux/redlock"
	"github.com/redmux/redmux/resp"
)

// startCluster starts an n-node fake cluster closed at the end of the test.
func startCluster(t testing.TB, n int) *fakeserver.Cluster {
	t.Helper()
	cl, err := fakeserver.StartCluster(n, fakeserver.Config{SweepInterval: 10 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

// newClient returns a client on addrs closed at the end of the test.
func newClient(t testing.TB, addrs []string, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	c, err := redlock.New(addrs, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// warm acquires and releases a lock four times, so that every node's
// connections are set up.
func warm(t testing.TB, c *redlock.Client) {
	t.Helper()
	ctx := context.Background()
	for i := 0; i < 4; i++ {
		l, err := c.TryAcquire(ctx, "warm-up")
		require.NoError(t, err)
		require.NoError(t, l.Release(ctx))
	}
}

// rawDo sends one command to addr on a fresh connection and returns the
// reply (its bytes stay valid: the buffer is not reused).
func rawDo(t testing.TB, addr string, args ...string) resp.Reply {
	t.Helper()
	r, err := rawDoErr(addr, args...)
	require.NoError(t, err)
	return r
}

func rawDoErr(addr string, args ...string) (resp.Reply, error) {
	cn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return resp.Reply{}, err
	}
	defer cn.Close()
	_ = cn.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := cn.Write(resp.AppendCommand(nil, args...)); err != nil {
		return resp.Reply{}, err
	}
	var buf []byte
	tmp := make([]byte, 4096)
	for {
		r, _, err := resp.Parse(buf)
		if err == nil {
			return r, nil
		}
		if !errors.Is(err, resp.ErrIncomplete) {
			return resp.Reply{}, err
		}
		n, err := cn.Read(tmp)
		if err != nil {
			return resp.Reply{}, err
		}
		buf = append(buf, tmp[:n]...)
	}
}

// setForeign stores another owner's value for key on the given nodes.
func setForeign(t testing.TB, addrs []string, key string, nodes ...int) {
	t.Helper()
	for _, i := range nodes {
		r := rawDo(t, addrs[i], "SET", key, "someone-else", "PX", "60000")
		require.True(t, r.IsOK(), "SET on node %d: %s", i, r.String())
	}
}

// holders returns, per node, whether it holds key with value v.
func holders(t testing.TB, addrs []string, key string, v []byte) []bool {
	t.Helper()
	out := make([]bool, len(addrs))
	for i, a := range addrs {
		r := rawDo(t, a, "GET", key)
		out[i] = !r.IsNil() && string(r.Data) == string(v)
	}
	return out
}

func count(b []bool) int {
	n := 0
	for _, x := range b {
		if x {
			n++
		}
	}
	return n
}

// eventually polls cond every 5ms for up to d.
func eventually(t testing.TB, d time.Duration, cond func() bool, msg string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf(msg, args...)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitAllHold waits until every node holds l's value: an acquisition
// returns as soon as a quorum answered, and the other nodes' SETs may still
// be in flight.
func waitAllHold(t testing.TB, addrs []string, key string, l redlock.Lock) {
	t.Helper()
	eventually(t, 2*time.Second, func() bool { return count(holders(t, addrs, key, l.Value())) == len(addrs) },
		"not every node got the SET of %q", key)
}
