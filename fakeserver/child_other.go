//go:build !linux

package fakeserver

import "syscall"

func childSysProcAttr() *syscall.SysProcAttr { return nil }
