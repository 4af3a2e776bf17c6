package redlock_test

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redmux/redmux/fakeserver"
	"github.com/redmux/redmux/redlock"
	"github.com/redmux/redmux/redlock/scripts"
	"github.com/redmux/redmux/resp"
)

// startCluster starts an n-node fake cluster closed at the end of the test.
// Its nodes are in service: each has a data-set marker a client made long
// ago (seedMarkers), as they report an uptime of an hour.
func startCluster(t testing.TB, n int) *fakeserver.Cluster {
	t.Helper()
	return startClusterWith(t, n, fakeserver.Config{})
}

// startClusterWith is startCluster with cfg (its SweepInterval set).
func startClusterWith(t testing.TB, n int, cfg fakeserver.Config) *fakeserver.Cluster {
	t.Helper()
	cfg.SweepInterval = 10 * time.Millisecond
	cl, err := fakeserver.StartCluster(n, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cl.Close() })
	seedMarkers(t, cl.Addrs()...)
	return cl
}

// seedMarkers gives each node at addrs (host:port, no password) a
// data-set marker without a young key, as a client of this version made
// it long ago (docs/OPERATIONS.md, rule 4): nodes in service, which a new
// client trusts at once. A node restarted without its data loses it, as
// a real one does.
func seedMarkers(t testing.TB, addrs ...string) {
	t.Helper()
	for _, a := range addrs {
		var id [16]byte
		_, _ = crand.Read(id[:])
		r := rawDo(t, a, "SET", scripts.MarkerKey, hex.EncodeToString(id[:]), "NX")
		require.True(t, r.IsOK() || r.IsNil(), "seeding %s's marker: %s", a, r.String())
	}
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

// lockKeys returns the keys on the node at addr that are not its data-set
// marker's (docs/OPERATIONS.md, rule 4).
func lockKeys(t testing.TB, addr string) []string {
	t.Helper()
	r := rawDo(t, addr, "KEYS", "*")
	var out []string
	it := r.Iter()
	var k resp.Reply
	for it.Next(&k) {
		if !strings.HasPrefix(string(k.Data), scripts.MarkerPrefix) {
			out = append(out, string(k.Data))
		}
	}
	return out
}
