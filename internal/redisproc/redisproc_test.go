package redisproc_test

import (
	"os"
	"syscall"
	"testing"

	"github.com/redmux/redmux/internal/redisproc"
	"github.com/redmux/redmux/internal/redisproc/redistest"
)

func TestStartStop(t *testing.T) {
	s := redistest.Start(t, redistest.Options{Password: "s3cret"})
	if s.Port == 6379 {
		t.Fatal("must never use 6379")
	}
	if err := redisproc.Ping(s.Addr, "s3cret"); err != nil {
		t.Fatalf("ping: %v", err)
	}
	if err := redisproc.Ping(s.Addr, ""); err == nil {
		t.Fatal("ping without password should fail")
	}
	pid := s.Pid()
	s.Stop()
	if err := syscall.Kill(pid, 0); err == nil {
		// The process may linger as a zombie only if not reaped; Wait reaped it.
		t.Fatalf("process %d still exists after Stop", pid)
	}
	if _, err := os.Stat(redisproc.Dir(s)); !os.IsNotExist(err) {
		t.Fatalf("dir %s not removed", redisproc.Dir(s))
	}
}
