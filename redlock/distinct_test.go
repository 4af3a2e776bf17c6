package redlock_test

import (
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redmux/redmux/redlock"
)

// forward listens on a free loopback port and forwards every connection
// to target: a second address of one server, as a proxy or a port
// forward gives. Everything it started stops at the test's end.
func forward(t *testing.T, target string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	track := func(c net.Conn) {
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
	}
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				_ = in.Close()
				continue
			}
			track(in)
			track(out)
			wg.Add(2)
			pipe := func(dst, src net.Conn) {
				defer wg.Done()
				_, _ = io.Copy(dst, src)
				_ = dst.Close()
				_ = src.Close()
			}
			go pipe(out, in)
			go pipe(in, out)
		}
	}()
	return ln.Addr().String()
}

// TestNewRefusesOneServerTwice (issue 46): a node list in which one server
// appears twice would count it twice towards the quorum ("-nodes a,a,a"
// reported 54.0k ops/s from a run that never acquired a lock). New refuses
// two entries whose addresses name one server (mux's check) and two whose
// set-ups reported one run_id (a second address of the server, here a
// port forward); three distinct servers are accepted.
func TestNewRefusesOneServerTwice(t *testing.T) {
	cl := startCluster(t, 3)
	a := cl.Addrs()
	_, err := redlock.New([]string{a[0], a[1], a[0]})
	require.ErrorIs(t, err, redlock.ErrBadOption)
	require.Contains(t, err.Error(), "are one server")

	_, err = redlock.New([]string{a[0], a[1], "redis://" + a[0] + "/3"})
	require.ErrorIs(t, err, redlock.ErrBadOption, "another database of one server is that server")

	fwd := forward(t, a[1])
	_, err = redlock.New([]string{a[0], a[1], fwd})
	require.ErrorIs(t, err, redlock.ErrBadOption)
	require.True(t, strings.Contains(err.Error(), "run_id") && strings.Contains(err.Error(), fwd), "%v", err)

	c, err := redlock.New(a)
	require.NoError(t, err)
	require.NoError(t, c.Close())
}
