package realredis

import (
	"os"
	"syscall"
	"testing"
)

func TestStartStop(t *testing.T) {
	s := StartT(t, Options{Password: "s3cret"})
	if s.Port == 6379 {
		t.Fatal("must never use 6379")
	}
	if err := ping(s.Addr, "s3cret"); err != nil {
		t.Fatalf("ping: %v", err)
	}
	if err := ping(s.Addr, ""); err == nil {
		t.Fatal("ping without password should fail")
	}
	pid := s.Pid()
	s.Stop()
	if err := syscall.Kill(pid, 0); err == nil {
		// The process may linger as a zombie only if not reaped; Wait reaped it.
		t.Fatalf("process %d still exists after Stop", pid)
	}
	if _, err := os.Stat(s.dir); !os.IsNotExist(err) {
		t.Fatalf("dir %s not removed", s.dir)
	}
}
