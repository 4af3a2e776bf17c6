package fakeserver

import (
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	ServeChild() // StartChild's child process is this test binary
	os.Exit(m.Run())
}

// A child cluster serves every node, with the password, and Close stops the
// process.
func TestStartChild(t *testing.T) {
	c, err := StartChild(3, ChildOptions{Password: "child-pw", Args: []string{"-test.run=^$"}})
	if err != nil {
		t.Fatal(err)
	}
	addrs := c.Addrs()
	if len(addrs) != 3 {
		t.Fatalf("addrs %v", addrs)
	}
	for _, a := range addrs {
		conn, err := net.DialTimeout("tcp", a, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
		_, _ = conn.Write([]byte("*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nAUTH\r\n$8\r\nchild-pw\r\n*1\r\n$4\r\nPING\r\n"))
		want := "-NOAUTH Authentication required.\r\n+OK\r\n+PONG\r\n"
		got := make([]byte, 0, len(want))
		buf := make([]byte, 256)
		for len(got) < len(want) {
			n, err := conn.Read(buf)
			if err != nil {
				t.Fatalf("%s: read: %v (got %q)", a, err, got)
			}
			got = append(got, buf[:n]...)
		}
		conn.Close()
		if string(got) != want {
			t.Fatalf("%s: got %q, want %q", a, got, want)
		}
	}
	pid := c.Pid()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Fatalf("child %d still running after Close", pid)
	}
}
