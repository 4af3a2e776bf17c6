//go:build windows

package redisproc

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

// Windows has no SIGSTOP/SIGCONT: Pause and Resume fail there.
var sigStop, sigCont = syscall.Signal(-1), syscall.Signal(-1)
