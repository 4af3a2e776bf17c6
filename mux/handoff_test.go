package mux

import (
	"sync"
	"sync/atomic"
	"testing"
)

// BenchmarkHandoffConns weighs, without I/O, the write path that issue
// 35's next step would change (results/cost/README.md): 256 goroutines
// each queue a 64-byte command and a slot on 5 connections and park until
// one serving goroutine has taken all 5 slots back and woken them.
//
//   - locks: as mux does today, each caller takes each connection's lock
//     to push its slot and append its command, and the server takes each
//     lock to drain;
//   - publish: each caller appends itself to one queue, and the server
//     alone pushes the slots and copies the commands, so the connections'
//     lines stay on its core.
//
// cpu-ns/op is per call; a lock pair is two.
func BenchmarkHandoffConns(b *testing.B) {
	b.Run("locks", func(b *testing.B) { benchHandoffConns(b, false) })
	b.Run("publish", func(b *testing.B) { benchHandoffConns(b, true) })
}

type handoffReq struct {
	wake chan struct{}
	got  int
	cmd  [64]byte
}

type handoffConn struct {
	mu   sync.Mutex
	ring []*handoffReq
	buf  []byte
	_    [64]byte // one connection per cache line
}

func benchHandoffConns(b *testing.B, publish bool) {
	const nodes = 5
	var (
		conns [nodes]handoffConn
		qmu   sync.Mutex
		q     []*handoffReq
		kick  = make(chan struct{}, 1)
		stop  = make(chan struct{})
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
				if publish {
					qmu.Lock()
					local, q = q, local[:0]
					qmu.Unlock()
					for _, r := range local {
						for i := range conns {
							conns[i].ring = append(conns[i].ring, r)
							conns[i].buf = append(conns[i].buf, r.cmd[:]...)
						}
					}
				}
				for i := range conns {
					cn := &conns[i]
					if !publish {
						cn.mu.Lock()
					}
					popped = append(popped[:0], cn.ring...)
					cn.ring, cn.buf = cn.ring[:0], cn.buf[:0]
					if !publish {
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
			r := &handoffReq{wake: make(chan struct{}, 1)}
			for left.Add(-1) >= 0 {
				if publish {
					qmu.Lock()
					q = append(q, r)
					qmu.Unlock()
				} else {
					for i := range conns {
						cn := &conns[i]
						cn.mu.Lock()
						cn.ring = append(cn.ring, r)
						cn.buf = append(cn.buf, r.cmd[:]...)
						cn.mu.Unlock()
					}
				}
				select {
				case kick <- struct{}{}:
				default:
				}
				<-r.wake
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	cpu.report(b)
}
