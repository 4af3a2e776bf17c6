package redlock

import "github.com/redmux/redmux/redlock/internal/hook"

func init() { hook.KeepAliveSynced = keepAliveSynced }

// keepAliveSynced is hook.KeepAliveSynced: with st.op held no extension or
// release runs, so the keep-alive's end must equal the lock's.
func keepAliveSynced(x any) (kept, synced bool) {
	l, ok := x.(Lock)
	if !ok || l.st == nil {
		return false, false
	}
	st := l.st
	st.op.Lock()
	defer st.op.Unlock()
	v := l.view()
	s := &st.c.ka
	s.mu.Lock()
	defer s.mu.Unlock()
	k := &st.ka
	if !v.held || !k.kept() || k.lock.gen != l.gen {
		return false, false
	}
	return true, k.end == v.end
}
