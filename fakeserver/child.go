package fakeserver

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Environment of a child-process cluster (see StartChild).
const (
	envChildNodes    = "REDMUX_FAKE_CHILD_NODES"
	envChildPassword = "REDMUX_FAKE_CHILD_PASSWORD"
)

// ServeChild must be called first thing in main (or TestMain) of a program
// that uses StartChild. When this process was started by StartChild, it
// serves the requested cluster until its standard input closes (the parent
// is done or died), then exits the process; otherwise it returns at once.
func ServeChild() {
	v := os.Getenv(envChildNodes)
	if v == "" {
		return
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 64 {
		fmt.Fprintf(os.Stderr, "fakeserver child: bad %s=%q\n", envChildNodes, v)
		os.Exit(2)
	}
	c, err := StartCluster(n, Config{Password: os.Getenv(envChildPassword)})
	if err != nil {
		fmt.Fprintf(os.Stderr, "fakeserver child: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("ADDRS %s\n", strings.Join(c.Addrs(), ","))
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = c.Close()
	os.Exit(0)
}

// ChildCluster is a fake cluster served by a child process: the running
// executable started again (its main or TestMain calls ServeChild). Keeping
// the servers in another process keeps their CPU time and allocations out
// of the client's measurements.
type ChildCluster struct {
	addrs []string
	pid   int
	stop  func()
}

// ChildOptions is what StartChild passes to the child: all of it is used.
type ChildOptions struct {
	// Password, when set, is every node's requirepass. It travels to the
	// child in its environment, never on its command line.
	Password string
	// Args are the child's command-line arguments. A test binary passes
	// "-test.run=^$" so that, should ServeChild not be called, it runs no
	// tests.
	Args []string
}

// StartChild starts an n-node cluster in a child process (the running
// executable, whose main or TestMain calls ServeChild) and returns once
// every node accepts connections (within 20 s). The child dies with this
// process on Linux.
func StartChild(n int, opt ChildOptions) (*ChildCluster, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, opt.Args...)
	cmd.Env = append(os.Environ(), envChildNodes+"="+strconv.Itoa(n), envChildPassword+"="+opt.Password)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = childSysProcAttr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan struct{})
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- l
		_, _ = io.Copy(io.Discard, stdout)
		_ = cmd.Wait()
		close(done)
	}()
	stop := func() {
		_ = stdin.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	var l string
	select {
	case l = <-line:
	case <-time.After(20 * time.Second):
		stop()
		return nil, errors.New("fakeserver: child cluster did not start within 20s")
	}
	addrs, ok := strings.CutPrefix(strings.TrimSpace(l), "ADDRS ")
	if !ok || len(strings.Split(addrs, ",")) != n {
		stop()
		return nil, fmt.Errorf("fakeserver: child cluster failed at start (printed %q; does main call ServeChild?)", l)
	}
	return &ChildCluster{addrs: strings.Split(addrs, ","), pid: cmd.Process.Pid, stop: stop}, nil
}

// Addrs returns the nodes' addresses.
func (c *ChildCluster) Addrs() []string { return append([]string(nil), c.addrs...) }

// Pid returns the child process's id.
func (c *ChildCluster) Pid() int { return c.pid }

// Close stops the child (closing its standard input, then killing it if it
// has not exited within 5 s) and waits for it.
func (c *ChildCluster) Close() error {
	c.stop()
	return nil
}
