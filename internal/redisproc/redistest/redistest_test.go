package redistest

import "testing"

// Required follows REDMUX_REQUIRE_REDIS: empty and "0" mean not required.
func TestRequired(t *testing.T) {
	for v, want := range map[string]bool{"": false, "0": false, "1": true, "yes": true} {
		t.Setenv(EnvRequire, v)
		if got := Required(); got != want {
			t.Errorf("%s=%q: Required() = %v, want %v", EnvRequire, v, got, want)
		}
	}
}

// StartN starts servers that answer on their addresses and are stopped when
// the test that started them ends.
func TestStartN(t *testing.T) {
	var pids []int
	t.Run("start", func(t *testing.T) {
		list := StartN(t, 2, Options{})
		addrs := Addrs(list)
		if len(addrs) != 2 || addrs[0] == addrs[1] {
			t.Fatalf("addrs %v", addrs)
		}
		for _, s := range list {
			pids = append(pids, s.Pid())
		}
	})
	if t.Skipped() || len(pids) == 0 {
		return
	}
	for _, pid := range pids {
		if processExists(pid) {
			t.Errorf("redis-server %d still running after its test ended", pid)
		}
	}
}
