package redlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redmux/redmux/internal/redisproc"
	"github.com/redmux/redmux/internal/redisproc/redistest"
	"github.com/redmux/redmux/mux"
	"github.com/redmux/redmux/redlock"
)

// TestRealTLSURLs locks on 3 TLS-only redis-servers given to New as
// rediss:// URLs with a password and the run's CA; with the wrong CA every
// node fails (redlock's error counts them; the TLS cause is the mux
// client's NodeErr, which a redlock.Client does not expose), and no error
// shows the password.
func TestRealTLSURLs(t *testing.T) {
	const pw = "redlock-tls-pw"
	files := redistest.Certs(t, redisproc.CertOptions{})
	srv := redistest.StartN(t, 3, redistest.Options{TLS: files, Password: pw})
	urls := func(ca string) []string {
		var out []string
		for _, s := range srv {
			out = append(out, "rediss://:"+pw+"@"+s.Addr+"?cacert="+ca)
		}
		return out
	}
	ctx := context.Background()
	// A generous node timeout: the property is the connection, not that a
	// loaded machine answers within 50ms.
	c, err := redlock.New(urls(files.CAFile), redlock.WithNodeTimeout(time.Second), redlock.WithTrustNodesAtStart())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	l, err := c.Acquire(ctx, "tls:a", redlock.WithTTL(5*time.Second))
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))

	other := redistest.Certs(t, redisproc.CertOptions{})
	bad, err := redlock.New(urls(other.CAFile), redlock.WithMuxConfig(mux.Config{DialTimeout: time.Second}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = bad.Close() })
	_, err = bad.TryAcquire(ctx, "tls:b")
	var na *redlock.NotAcquiredError
	require.True(t, errors.As(err, &na), "%v", err)
	require.Equal(t, 3, na.Failed, "%v", err)
	require.False(t, strings.Contains(err.Error(), pw), "password in %v", err)
}
