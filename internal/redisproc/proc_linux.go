//go:build linux

package redisproc

import "syscall"

// sysProcAttr puts the server in its own process group and has the kernel
// kill it if the test process dies first.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

var sigStop, sigCont = syscall.SIGSTOP, syscall.SIGCONT
