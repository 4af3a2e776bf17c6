// Package realredis starts and stops real redis-server processes on free
// loopback ports, for tests and benchmarks that compare against real Redis.
//
// Every server is started with persistence off, bound to 127.0.0.1, on a port
// chosen free by the kernel (never 6379), and is stopped by its pid.
//
// Tests call Require (or RequireN): when redis-server is not installed the
// test is skipped with a loud message, unless REDMUX_REQUIRE_REDIS is set (CI
// sets it), in which case the test fails.
package realredis

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// EnvRequire is the environment variable that turns a missing redis-server
// into a test failure instead of a skip.
const EnvRequire = "REDMUX_REQUIRE_REDIS"

// Server is one running redis-server process.
type Server struct {
	Addr string // "127.0.0.1:port"
	Port int

	cmd      *exec.Cmd
	dir      string
	stopOnce sync.Once
	done     chan struct{}
}

// Binary returns the path of redis-server, or "" if it is not installed.
func Binary() string {
	p, err := exec.LookPath("redis-server")
	if err != nil {
		return ""
	}
	return p
}

// Available reports whether redis-server is installed.
func Available() bool { return Binary() != "" }

// Required reports whether REDMUX_REQUIRE_REDIS is set to a non-empty value
// other than "0".
func Required() bool {
	v := os.Getenv(EnvRequire)
	return v != "" && v != "0"
}

// Require skips t (loudly) when redis-server is absent and not required, and
// fails t when it is absent but required.
func Require(t testing.TB) {
	t.Helper()
	if Available() {
		return
	}
	if Required() {
		t.Fatalf("redis-server is not installed but %s is set: install it (apt-get install redis-server)", EnvRequire)
	}
	t.Skipf("SKIPPED: redis-server is not installed (set %s=1 to make this a failure); this test did NOT run against real Redis", EnvRequire)
}

// FreePort asks the kernel for a free TCP port on 127.0.0.1.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Options tune a started server.
type Options struct {
	// Password, when set, is configured with requirepass.
	Password string
	// Extra are additional "--name value" arguments for redis-server.
	Extra []string
}

// Start launches redis-server on a free loopback port and waits (up to 10 s)
// until it answers PING. The caller must Stop it.
func Start(opt Options) (*Server, error) {
	bin := Binary()
	if bin == "" {
		return nil, errors.New("realredis: redis-server is not installed")
	}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		s, err := start(bin, port, opt)
		if err == nil {
			return s, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

func start(bin string, port int, opt Options) (*Server, error) {
	dir, err := os.MkdirTemp("", "redmux-redis-")
	if err != nil {
		return nil, err
	}
	args := []string{
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--daemonize", "no",
		"--dir", dir,
		"--logfile", "",
		"--loglevel", "warning",
		"--protected-mode", "no",
	}
	if opt.Password != "" {
		args = append(args, "--requirepass", opt.Password)
	}
	args = append(args, opt.Extra...)
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	// Own process group, so signals to the test runner do not reach it and
	// Stop can kill it by pid.
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Port: port, cmd: cmd, dir: dir, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(s.done) }()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			os.RemoveAll(dir)
			return nil, fmt.Errorf("realredis: redis-server exited at start on port %d", port)
		default:
		}
		if err := ping(s.Addr, opt.Password); err == nil {
			return s, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.Stop()
	return nil, fmt.Errorf("realredis: redis-server on port %d did not answer PING within 10s", port)
}

func ping(addr, password string) error {
	c, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	msg := "*1\r\n$4\r\nPING\r\n"
	if password != "" {
		msg = fmt.Sprintf("*2\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\n", len(password), password) + msg
	}
	if _, err := c.Write([]byte(msg)); err != nil {
		return err
	}
	r := bufio.NewReader(c)
	if password != "" {
		if _, err := r.ReadString('\n'); err != nil {
			return err
		}
	}
	line, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("realredis: unexpected PING reply %q", line)
	}
	return nil
}

// Pid returns the server's process id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Pause stops the process with SIGSTOP (it keeps its sockets but answers
// nothing: a partition as seen by clients).
func (s *Server) Pause() error { return s.cmd.Process.Signal(sigStop) }

// Resume continues a paused process with SIGCONT.
func (s *Server) Resume() error { return s.cmd.Process.Signal(sigCont) }

// Stop kills the process by its pid, waits for it to exit (up to 5 s) and
// removes its directory. Safe to call more than once.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		_ = s.cmd.Process.Signal(sigCont)
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(3 * time.Second):
			_ = s.cmd.Process.Kill()
			select {
			case <-s.done:
			case <-time.After(2 * time.Second):
			}
		}
		os.RemoveAll(s.dir)
	})
}

// StartN starts n servers; on error it stops the ones already started.
func StartN(n int, opt Options) ([]*Server, error) {
	out := make([]*Server, 0, n)
	for i := 0; i < n; i++ {
		s, err := Start(opt)
		if err != nil {
			StopAll(out)
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// StopAll stops every server in list.
func StopAll(list []*Server) {
	for _, s := range list {
		s.Stop()
	}
}

// Addrs returns the servers' addresses.
func Addrs(list []*Server) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = s.Addr
	}
	return out
}

// StartT is Start for tests: it calls Require, fails t on error, and stops
// the server in t.Cleanup.
func StartT(t testing.TB, opt Options) *Server {
	t.Helper()
	Require(t)
	s, err := Start(opt)
	if err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// StartNT is StartN for tests.
func StartNT(t testing.TB, n int, opt Options) []*Server {
	t.Helper()
	Require(t)
	list, err := StartN(n, opt)
	if err != nil {
		t.Fatalf("start %d redis-servers: %v", n, err)
	}
	t.Cleanup(func() { StopAll(list) })
	return list
}
