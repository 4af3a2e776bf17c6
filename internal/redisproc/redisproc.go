// Package redisproc starts and stops real redis-server processes on free
// loopback ports, for benchmarks (redmux-bench -real-local) and tests that
// compare against real Redis.
//
// Every server is started with persistence off, bound to 127.0.0.1, on a port
// chosen free by the kernel (never 6379), and is stopped by its pid.
//
// It does not import package testing, so the benchmark binary can link it;
// the test helpers (skip or fail when redis-server is absent, stop in
// t.Cleanup) are in package redistest.
package redisproc

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Server is one running redis-server process.
type Server struct {
	Addr string // "127.0.0.1:port" ("[::1]:port" with Options.Host "::1")
	Host string // the loopback address it listens on
	Port int
	TLS  bool // the port speaks TLS only
	// Sentinel: a sentinel (redis-server <conf> --sentinel), not a data
	// node.
	Sentinel bool

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

// FreePort asks the kernel for a free TCP port on 127.0.0.1.
func FreePort() (int, error) { return freePort("127.0.0.1") }

func freePort(host string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
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
	// Port, when not 0, is the port to listen on (to restart a server on
	// the port it had); 0 picks a free one.
	Port int
	// TLS, when set, makes the server speak TLS only (--tls-port; the
	// plaintext port is off).
	TLS *TLS
	// Host is the loopback address to listen on: "127.0.0.1" (the
	// default) or "::1".
	Host string
}

// TLS is a server's TLS set-up: PEM files.
type TLS struct {
	CertFile, KeyFile string // the server's certificate and key
	CAFile            string // CA that client certificates must chain to
	// AuthClients requires a client certificate (--tls-auth-clients yes);
	// else one is optional (checked against CAFile when sent).
	AuthClients bool
	// ClientCertFile and ClientKeyFile are the readiness probe's client
	// certificate when AuthClients is set.
	ClientCertFile, ClientKeyFile string
}

// SupportsTLS reports whether the installed redis-server was built with
// TLS (it accepts --tls-port). It runs redis-server once with no port at
// all (it exits at once, "not listen anywhere") to find out; the answer is
// kept.
func SupportsTLS() bool {
	tlsOnce.Do(func() {
		bin := Binary()
		if bin == "" {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		out, _ := exec.CommandContext(ctx, bin, "--port", "0", "--tls-port", "0").CombinedOutput()
		// A build without TLS rejects the directive while reading its
		// configuration; one with TLS gets past it and exits.
		tlsOK = ctx.Err() == nil && !strings.Contains(string(out), "Bad directive")
	})
	return tlsOK
}

var (
	tlsOnce sync.Once
	tlsOK   bool
)

// Start launches redis-server on a free loopback port and waits (up to 10 s)
// until it answers PING. The caller must Stop it.
func Start(opt Options) (*Server, error) {
	bin := Binary()
	if bin == "" {
		return nil, errors.New("redisproc: redis-server is not installed")
	}
	if opt.Host == "" {
		opt.Host = "127.0.0.1"
	}
	if opt.Host != "127.0.0.1" && opt.Host != "::1" {
		return nil, fmt.Errorf("redisproc: Host %q: want 127.0.0.1 or ::1", opt.Host)
	}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port := opt.Port
		if port == 0 {
			p, err := freePort(opt.Host)
			if err != nil {
				return nil, err
			}
			port = p
		} else if attempt > 0 {
			time.Sleep(100 * time.Millisecond)
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
	portArgs := []string{"--port", strconv.Itoa(port)}
	if t := opt.TLS; t != nil {
		auth := "optional"
		if t.AuthClients {
			auth = "yes"
		}
		portArgs = []string{"--port", "0", "--tls-port", strconv.Itoa(port),
			"--tls-cert-file", t.CertFile, "--tls-key-file", t.KeyFile,
			"--tls-ca-cert-file", t.CAFile, "--tls-auth-clients", auth}
	}
	args := []string{
		"--bind", opt.Host,
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
	args = append(portArgs, args...)
	args = append(args, opt.Extra...)
	return launch(bin, args, dir, opt.Host, port, opt.Password, opt.TLS)
}

// launch runs redis-server with args in dir (removed when it stops) and
// waits (up to 10 s) until it answers PING on port.
func launch(bin string, args []string, dir, host string, port int, password string, t *TLS) (*Server, error) {
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	// Own process group, so signals to the test runner do not reach it and
	// Stop can kill it by pid.
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s := &Server{Addr: net.JoinHostPort(host, strconv.Itoa(port)), Host: host, Port: port, TLS: t != nil, cmd: cmd, dir: dir, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(s.done) }()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			os.RemoveAll(dir)
			return nil, fmt.Errorf("redisproc: redis-server exited at start on port %d", port)
		default:
		}
		if err := ping(s.Addr, password, t); err == nil {
			return s, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.Stop()
	return nil, fmt.Errorf("redisproc: redis-server on port %d did not answer PING within 10s", port)
}

func ping(addr, password string, t *TLS) error {
	var c net.Conn
	var err error
	if t != nil {
		// A readiness probe of our own child process, not a security
		// check: the server's certificate may be one a test made invalid.
		cfg := &tls.Config{InsecureSkipVerify: true}
		if t.AuthClients {
			kp, err := tls.LoadX509KeyPair(t.ClientCertFile, t.ClientKeyFile)
			if err != nil {
				return err
			}
			cfg.Certificates = []tls.Certificate{kp}
		}
		c, err = tls.DialWithDialer(&net.Dialer{Timeout: 500 * time.Millisecond}, "tcp", addr, cfg)
	} else {
		c, err = net.DialTimeout("tcp", addr, 500*time.Millisecond)
	}
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
		return fmt.Errorf("redisproc: unexpected PING reply %q", line)
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
