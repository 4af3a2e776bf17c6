// Package hook lets redlock's safety checker stall a lock holder at fixed
// points inside Acquire and Extend, as a GC pause or a descheduled thread
// would. Only packages under redlock/ can import it; nothing in the
// library sets it.
//
// Cost when unset: At is one atomic pointer load (a plain load on amd64
// and arm64) and a predictable branch, small enough to inline; no
// allocation, no ctx.Value lookup. The checker sets it for the length of a
// run; its function looks at ctx to decide whether this call is one of its
// holders.
package hook

import (
	"context"
	"sync/atomic"
)

// Point names a place in the lock's code.
type Point uint8

const (
	// AcquireReplied: an acquisition attempt's SET replies are in (or its
	// wait ended), and the clock has not been read again yet. A pause
	// here is elapsed time the attempt must subtract.
	AcquireReplied Point = iota + 1
	// ExtendReplied: the same point in Extend.
	ExtendReplied
	// FenceWriteBack: a fenced acquisition was granted and its token
	// computed; the write-back has not been sent. A pause here is one
	// past which the token must not become valid.
	FenceWriteBack
	// ExtendSend: an extension read its clock (t1) and built its command;
	// nothing has been sent. A pause here sends it late, even after the
	// key expired and another holder took the resource: the nodes must
	// refuse it and the lock must not write over that holder's key.
	ExtendSend
)

// Func is called at a Point with the ctx of the call.
type Func func(ctx context.Context, p Point)

var fn atomic.Pointer[Func]

// Set installs f (nil removes it) and returns the previous one.
func Set(f Func) Func {
	var p *Func
	if f != nil {
		p = &f
	}
	old := fn.Swap(p)
	if old == nil {
		return nil
	}
	return *old
}

// At calls the installed function, if any.
func At(ctx context.Context, p Point) {
	if f := fn.Load(); f != nil {
		(*f)(ctx, p)
	}
}

// KeepAliveSynced is set by redlock (at init) for the checker: for a Lock
// (passed as any), whether it is kept alive and, if so, whether the
// keep-alive's idea of the lock agrees with the lock's own (its end of
// validity), read while no extension or release of the lock is in flight.
// They must agree whenever the lock is held: keep-alive and Validity never
// disagree (issue 21).
var KeepAliveSynced func(lock any) (kept, synced bool)

// GuessFunc replaces a fenced acquisition's token guess (see Guess).
type GuessFunc func(ctx context.Context, guess uint64) uint64

var guessFn atomic.Pointer[GuessFunc]

// SetGuess installs f (nil removes it) and returns the previous one. The
// checker uses it to play clients whose clocks are behind (low guesses) or
// agree to the microsecond (equal guesses), so that fenced acquisitions
// take the write-back path as well as the one-round-trip path.
func SetGuess(f GuessFunc) GuessFunc {
	var p *GuessFunc
	if f != nil {
		p = &f
	}
	old := guessFn.Swap(p)
	if old == nil {
		return nil
	}
	return *old
}

// Guess returns the installed function's replacement for guess, or guess.
func Guess(ctx context.Context, guess uint64) uint64 {
	if f := guessFn.Load(); f != nil {
		return (*f)(ctx, guess)
	}
	return guess
}
