//go:build linux

package mux

import (
	"errors"
	"io"
	"net/netip"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

var errDialTimeout = errors.New("timeout")

// dialRaw connects to node i with a non-blocking connect bounded by
// DialTimeout (host names are resolved now, at dial time), sets
// TCP_NODELAY and keepalive, and runs the set-up pipeline. It never runs on
// a caller's path: New and the supervisor call it. efd (readable once the
// client closes) aborts it.
// It returns the bytes read past the set-up replies (push frames; see
// runSetup), which the connection's reader takes first.
func (c *Client) dialRaw(i, shard, efd int) (int, []byte, error) {
	// where: as the node's topology says (its address, the primary the
	// sentinels name, the shard's primary in the slot map)
	fd, rest := -1, []byte(nil)
	err := c.nodes[i].topo.dial(c, i, shard, func(host string, port int, deadline time.Time) (func(), error) {
		var err error
		fd, rest, err = c.dialRawTo(i, shard, efd, host, port, deadline)
		return func() { _ = unix.Close(fd) }, err
	})
	if err != nil {
		return -1, nil, err
	}
	return fd, rest, nil
}

// dialRawTo is dialRaw to host:port, by deadline.
func (c *Client) dialRawTo(i, shard, efd int, host string, port int, deadline time.Time) (int, []byte, error) {
	ips, err := c.lookup(host, deadline)
	if err != nil {
		return -1, nil, err
	}
	var lastErr error
	for _, ip := range ips {
		fd, err := connectRaw(ip.Unmap(), port, efd, deadline)
		if err != nil {
			lastErr = err
			continue
		}
		rw := rawRW{fd: fd, efd: efd}
		rest, err := runSetup(&rw, c.cfg, i, shard, deadline)
		if err != nil {
			_ = unix.Close(fd)
			return -1, nil, err
		}
		return fd, rest, nil
	}
	if lastErr == nil {
		lastErr = errors.New("no address")
	}
	return -1, nil, &setupError{step: "connect", text: lastErr.Error()}
}

func connectRaw(ip netip.Addr, port, efd int, deadline time.Time) (int, error) {
	var sa unix.Sockaddr
	family := unix.AF_INET
	if ip.Is4() {
		sa = &unix.SockaddrInet4{Port: port, Addr: ip.As4()}
	} else {
		family = unix.AF_INET6
		sa = &unix.SockaddrInet6{Port: port, Addr: ip.As16()}
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
	if err != nil {
		return -1, os.NewSyscallError("socket", err)
	}
	opts := [...]struct{ level, opt, v int }{
		{unix.IPPROTO_TCP, unix.TCP_NODELAY, 1},
		{unix.SOL_SOCKET, unix.SO_KEEPALIVE, 1},
		{unix.IPPROTO_TCP, unix.TCP_KEEPIDLE, 15},
		{unix.IPPROTO_TCP, unix.TCP_KEEPINTVL, 15},
	}
	for _, o := range opts {
		if err := unix.SetsockoptInt(fd, o.level, o.opt, o.v); err != nil {
			_ = unix.Close(fd)
			return -1, os.NewSyscallError("setsockopt", err)
		}
	}
	err = unix.Connect(fd, sa)
	if err == unix.EINPROGRESS || err == unix.EINTR {
		if err = waitFd(fd, efd, unix.POLLOUT, deadline); err == nil {
			var soerr int
			soerr, err = unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
			if err == nil && soerr != 0 {
				err = os.NewSyscallError("connect", unix.Errno(soerr))
			}
		}
	} else if err != nil {
		err = os.NewSyscallError("connect", err)
	}
	if err != nil {
		_ = unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// waitFd polls fd for events until deadline; the client's close eventfd
// aborts the wait with ErrClosed.
func waitFd(fd, efd int, events int16, deadline time.Time) error {
	for {
		rem := time.Until(deadline)
		if rem <= 0 {
			return errDialTimeout
		}
		pfd := [2]unix.PollFd{{Fd: int32(fd), Events: events}, {Fd: int32(efd), Events: unix.POLLIN}}
		n, err := unix.Poll(pfd[:], int((rem+time.Millisecond-1)/time.Millisecond))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return os.NewSyscallError("poll", err)
		}
		if pfd[1].Revents != 0 {
			return ErrClosed
		}
		if n > 0 && pfd[0].Revents != 0 {
			return nil
		}
	}
}

// rawRW is blocking-with-deadline I/O on a non-blocking socket, for the
// set-up pipeline.
type rawRW struct{ fd, efd int }

func (r *rawRW) write(b []byte, deadline time.Time) error {
	for len(b) > 0 {
		n, err := unix.Write(r.fd, b)
		switch {
		case err == unix.EINTR:
		case err == unix.EAGAIN:
			if err := waitFd(r.fd, r.efd, unix.POLLOUT, deadline); err != nil {
				return err
			}
		case err != nil:
			return os.NewSyscallError("write", err)
		default:
			b = b[n:]
		}
	}
	return nil
}

func (r *rawRW) read(b []byte, deadline time.Time) (int, error) {
	for {
		n, err := unix.Read(r.fd, b)
		switch {
		case err == unix.EINTR:
		case err == unix.EAGAIN:
			if err := waitFd(r.fd, r.efd, unix.POLLIN, deadline); err != nil {
				return 0, err
			}
		case err != nil:
			return 0, os.NewSyscallError("read", err)
		case n == 0:
			return 0, io.EOF
		default:
			return n, nil
		}
	}
}
