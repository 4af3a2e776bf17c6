//go:build linux && !(amd64 || arm64 || riscv64 || loong64 || ppc64le)

package mux

// newURingDriver: no io_uring transport in this build (set_uring_none.go).
func newURingDriver(*Client) (*tokenDriver, error) { return nil, uringRefused() }
