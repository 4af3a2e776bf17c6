package mux

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// The hand-off benchmarks measure no mux code: they weigh, without I/O,
// what a goroutine-per-caller client pays the Go runtime to hand a call
// to the goroutine that serves it and to be woken, and what the write
// path adds (results/cost/README.md, issue 35). 256 goroutines (as in
// BenchmarkLockOp256) each queue a call and park on a channel of their own
// until one serving goroutine wakes them; cpu-ns/op is per call, a lock
// pair is two. Run them beside BenchmarkLockOp256 and with GOMAXPROCS=1.

// BenchmarkHandoffFloor: each call is appended to one mutex-guarded queue
// (and the server kicked through a channel), which the server drains,
// waking each caller: a floor under any goroutine-per-caller client.
func BenchmarkHandoffFloor(b *testing.B) { benchHandoff(b, handoffFloor) }

// BenchmarkHandoffWait is the floor with the caller parked three ways:
// recv, on its own channel alone; own-select, in a select on it and a
// second channel of its own; shared-select, in a select on it and one
// channel every caller shares. mux's followers waited as in
// shared-select (their batch's channel and the client's done channel)
// until Close woke them instead: the select, not the sharing, is what
// costs on 2 cores (results/cost/README.md, issue 47).
func BenchmarkHandoffWait(b *testing.B) {
	b.Run("recv", func(b *testing.B) { benchHandoff(b, handoffFloor) })
	b.Run("own-select", func(b *testing.B) { benchHandoff(b, handoffOwnSelect) })
	b.Run("shared-select", func(b *testing.B) { benchHandoff(b, handoffSharedSelect) })
}

// BenchmarkHandoffConns adds a 64-byte command and a reply slot on each of
// 5 connections per call, which the server takes back before it wakes the
// caller:
//
//   - locks: as mux does today, each caller takes each connection's lock
//     to push its slot and append its command, and the server takes each
//     lock to drain;
//   - publish: each caller appends itself to the one queue, and the server
//     alone pushes the slots and copies the commands, so the connections'
//     lines stay on its core.
func BenchmarkHandoffConns(b *testing.B) {
	b.Run("locks", func(b *testing.B) { benchHandoff(b, handoffLocks) })
	b.Run("publish", func(b *testing.B) { benchHandoff(b, handoffPublish) })
}

const (
	handoffFloor = iota
	handoffLocks
	handoffPublish
	handoffSharedSelect // handoffFloor, each caller also selecting on one shared channel
	handoffOwnSelect    // handoffFloor, each caller also selecting on a second channel of its own
)

type handoffReq struct {
	wake  chan struct{}
	never chan struct{} // handoffOwnSelect's second channel
	got   int
	cmd   [64]byte
}

type handoffConn struct {
	mu   sync.Mutex
	ring []*handoffReq
	buf  []byte
	_    [64]byte // one connection per cache line
}

func benchHandoff(b *testing.B, mode int) {
	const nodes = 5
	var (
		conns [nodes]handoffConn
		qmu   sync.Mutex
		q     []*handoffReq
		kick  = make(chan struct{}, 1)
		stop  = make(chan struct{})
		never = make(chan struct{}) // handoffSharedSelect's shared channel
		left  atomic.Int64
		wg    sync.WaitGroup
	)
	go func() {
		var local, popped []*handoffReq
		for {
			select {
			case <-kick:
			case <-stop:
				return
			}
			for n := 1; n > 0; {
				n = 0
				if mode != handoffLocks {
					qmu.Lock()
					local, q = q, local[:0]
					qmu.Unlock()
					n += len(local)
					for _, r := range local {
						if mode != handoffLocks && mode != handoffPublish {
							r.wake <- struct{}{}
							continue
						}
						for i := range conns {
							conns[i].ring = append(conns[i].ring, r)
							conns[i].buf = append(conns[i].buf, r.cmd[:]...)
						}
					}
				}
				if mode != handoffLocks && mode != handoffPublish {
					continue
				}
				for i := range conns {
					cn := &conns[i]
					if mode == handoffLocks {
						cn.mu.Lock()
					}
					popped = append(popped[:0], cn.ring...)
					cn.ring, cn.buf = cn.ring[:0], cn.buf[:0]
					if mode == handoffLocks {
						cn.mu.Unlock()
					}
					n += len(popped)
					for _, r := range popped {
						if r.got++; r.got == nodes {
							r.got = 0
							r.wake <- struct{}{}
						}
					}
				}
			}
		}
	}()
	defer close(stop)
	b.ReportAllocs()
	left.Store(int64(b.N))
	cpu := startCPU()
	b.ResetTimer()
	for range 256 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &handoffReq{wake: make(chan struct{}, 1), never: make(chan struct{})}
			for left.Add(-1) >= 0 {
				if mode == handoffLocks {
					for i := range conns {
						cn := &conns[i]
						cn.mu.Lock()
						cn.ring = append(cn.ring, r)
						cn.buf = append(cn.buf, r.cmd[:]...)
						cn.mu.Unlock()
					}
				} else {
					qmu.Lock()
					q = append(q, r)
					qmu.Unlock()
				}
				select {
				case kick <- struct{}{}:
				default:
				}
				if mode == handoffOwnSelect {
					select {
					case <-r.wake:
					case <-r.never:
					}
					continue
				}
				if mode == handoffSharedSelect {
					select {
					case <-r.wake:
					case <-never:
					}
					continue
				}
				<-r.wake
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	cpu.report(b)
}

// BenchmarkCoreHop is one cache line's round trip between two goroutines
// spinning on two Ps (two threads, on two cores when the machine has
// them): what the hardware charges each cross-core hand-off of mux's (a
// batch the reader fills, a mutex both sides take, a wake-up). On the
// 2-vCPU VMs here it is bimodal, about 80 ns when the vCPUs share a
// last-level cache and about 400 ns when the hypervisor places them
// apart, and mux's client CPU per pair at -c 256 nearly doubles with it
// while redis-benchmark's barely moves (results/cost/README.md, ninth
// session): ceiling.sh and fenced.sh print it with every round. Skipped
// below GOMAXPROCS 2.
func BenchmarkCoreHop(b *testing.B) {
	if runtime.GOMAXPROCS(0) < 2 {
		b.Skip("needs GOMAXPROCS >= 2")
	}
	var x atomic.Int64
	n := int64(b.N)
	done := make(chan struct{})
	b.ResetTimer()
	go func() {
		for i := int64(1); i < 2*n; i += 2 {
			for x.Load() != i {
			}
			x.Store(i + 1)
		}
		close(done)
	}()
	for i := int64(0); i < 2*n; i += 2 {
		for x.Load() != i {
		}
		x.Store(i + 1)
	}
	<-done
}
