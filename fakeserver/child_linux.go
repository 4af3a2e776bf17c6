//go:build linux

package fakeserver

import "syscall"

// childSysProcAttr has the kernel kill the child cluster if its parent dies.
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
