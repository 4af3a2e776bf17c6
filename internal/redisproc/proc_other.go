//go:build !linux && !windows

package redisproc

import "syscall"

// sysProcAttr puts the server in its own process group.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

var sigStop, sigCont = syscall.SIGSTOP, syscall.SIGCONT
