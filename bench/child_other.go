//go:build !unix

package bench

func detachChild() {}
