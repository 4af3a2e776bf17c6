package mux

import (
	"strings"
	"testing"

	"github.com/redmux/redmux/fakeserver"
	"github.com/redmux/redmux/internal/redisproc/redistest"
)

// A node that requires a password, reached without one, answers "NOAUTH
// Authentication required."; the node error says that the node requires a
// password and how to give one (not just "AUTH failed"), and still wraps
// ErrAuth. A wrong password keeps "AUTH failed". No error shows the
// password. Run on the fake and on redis-server --requirepass.
func TestNoPasswordSaysHowToGiveOne(t *testing.T) {
	const pw = "n0auth-test-pass"
	servers := []struct {
		name  string
		addrs func(t *testing.T) []string
	}{
		{"fake", func(t *testing.T) []string { return startFake(t, 3, fakeserver.Config{Password: pw}).Addrs() }},
		{"redis-server", func(t *testing.T) []string {
			return redistest.Addrs(redistest.StartN(t, 3, redistest.Options{Password: pw}))
		}},
	}
	tests := []struct {
		name     string
		password string
		resp3    bool
		want     []string // in every node's error
		notWant  []string
	}{
		{"no password", "", false,
			[]string{"requires a password and none was given", "redis://:PASSWORD@host:port", "Config.Password", "NOAUTH"},
			[]string{"AUTH failed"}},
		{"no password, RESP3", "", true,
			[]string{"requires a password and none was given", "redis://:PASSWORD@host:port", "NOAUTH"},
			[]string{"AUTH failed"}},
		{"wrong password", "not-" + pw, false,
			[]string{"AUTH failed", "WRONGPASS"},
			[]string{"requires a password"}},
	}
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			addrs := srv.addrs(t)
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					c := newTestClient(t, addrs, func(cfg *Config) { cfg.Password = tc.password; cfg.RESP3 = tc.resp3 })
					checkAllDown(t, c, ErrAuth, tc.want[0], pw)
					for i := 0; i < c.N(); i++ {
						msg := c.NodeErr(i).Error()
						for _, w := range tc.want {
							if !strings.Contains(msg, w) {
								t.Errorf("node %d: %q lacks %q", i, msg, w)
							}
						}
						for _, w := range tc.notWant {
							if strings.Contains(msg, w) {
								t.Errorf("node %d: %q has %q", i, msg, w)
							}
						}
					}
				})
			}
		})
	}
}
