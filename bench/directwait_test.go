package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redmux/redmux/bench/internal/report"
	"github.com/redmux/redmux/mux"
	"github.com/stretchr/testify/require"
)

// TestDirectWaitFlag: -direct-wait parses into the config (off by default),
// out-of-range values are usage errors, and a run with it set measures
// with it (0 failures) and records it in summary.json and report.md.
func TestDirectWaitFlag(t *testing.T) {
	tests := []struct {
		args []string
		want time.Duration
		bad  bool
	}{
		{nil, 0, false},
		{[]string{"-direct-wait", "1ms"}, time.Millisecond, false},
		{[]string{"-direct-wait", "250us"}, 250 * time.Microsecond, false},
		{[]string{"-direct-wait", "-1ms"}, 0, true},
		{[]string{"-direct-wait", "2s"}, 0, true},
	}
	for _, tt := range tests {
		cfg, err := ParseArgs(tt.args, noEnv)
		if tt.bad {
			require.Error(t, err, "%v", tt.args)
			require.True(t, errors.Is(err, ErrUsage), "%v: %v", tt.args, err)
			require.Contains(t, err.Error(), "-direct-wait")
			continue
		}
		require.NoError(t, err, "%v", tt.args)
		require.Equal(t, tt.want, cfg.DirectWait, "%v", tt.args)
	}

	// A generous node timeout: Failed must be zero however loaded the
	// machine (a full -race run at load 10+ failed 2 within 50ms).
	dir := t.TempDir()
	var out, errb bytes.Buffer
	code := Main([]string{"-fake", "3", "-strategy", "mux", "-c", "1", "-n", "200", "-warmup", "0s",
		"-direct-wait", "1ms", "-timeout", "1s", "-out", dir}, &out, &errb, noEnv)
	require.Equal(t, 0, code, errb.String())
	b, err := os.ReadFile(filepath.Join(dir, report.FileSummary))
	require.NoError(t, err)
	var rep report.Report
	require.NoError(t, json.Unmarshal(b, &rep))
	require.Equal(t, 1.0, rep.Config.DirectWaitMs)
	require.Len(t, rep.Strategies, 1)
	require.Zero(t, rep.Strategies[0].Failed)
	md, err := os.ReadFile(filepath.Join(dir, report.FileReport))
	require.NoError(t, err)
	require.True(t, strings.Contains(string(md), "mux direct wait (-direct-wait) | 1ms"), "report.md names it")
}

// TestTransportFlag: -transport takes auto, epoll or io_uring (auto by default,
// anything else is a usage error naming both); a run on io_uring measures
// on it (0 failures) and says so in summary.json and report.md, and a
// kernel that refuses io_uring fails the run rather than letting it
// measure epoll under io_uring's name.
func TestTransportFlag(t *testing.T) {
	cfg, err := ParseArgs(nil, noEnv)
	require.NoError(t, err)
	require.Equal(t, mux.TransportAuto, cfg.Transport)
	require.Empty(t, cfg.transportName(), "auto, the default, is not recorded")
	cfg, err = ParseArgs([]string{"-transport", "epoll"}, noEnv)
	require.NoError(t, err)
	require.Equal(t, mux.TransportEpoll, cfg.Transport)
	require.Equal(t, "epoll", cfg.transportName())
	cfg, err = ParseArgs([]string{"-transport", "io_uring"}, noEnv)
	require.NoError(t, err)
	require.Equal(t, mux.TransportIOURing, cfg.Transport)
	_, err = ParseArgs([]string{"-transport", "kqueue"}, noEnv)
	require.True(t, errors.Is(err, ErrUsage), "%v", err)
	require.Contains(t, err.Error(), "epoll or io_uring")

	dir := t.TempDir()
	var out, errb bytes.Buffer
	code := Main([]string{"-fake", "3", "-strategy", "mux", "-c", "1", "-n", "200", "-warmup", "0s",
		"-transport", "io_uring", "-timeout", "1s", "-out", dir}, &out, &errb, noEnv)
	if code != 0 && strings.Contains(errb.String(), "io_uring refused") {
		if v := os.Getenv("REDMUX_REQUIRE_IOURING"); v != "" && v != "0" {
			t.Fatalf("this machine refuses io_uring, and REDMUX_REQUIRE_IOURING is set: %s", errb.String())
		}
		t.Skipf("SKIPPED: this machine refuses io_uring, and the run said so: %s", errb.String())
	}
	require.Equal(t, 0, code, errb.String())
	b, err := os.ReadFile(filepath.Join(dir, report.FileSummary))
	require.NoError(t, err)
	var rep report.Report
	require.NoError(t, json.Unmarshal(b, &rep))
	require.Equal(t, "io_uring", rep.Config.MuxTransport)
	require.Len(t, rep.Strategies, 1)
	require.Zero(t, rep.Strategies[0].Failed)
	require.EqualValues(t, 200, rep.Strategies[0].Acquired)
	md, err := os.ReadFile(filepath.Join(dir, report.FileReport))
	require.NoError(t, err)
	require.Contains(t, string(md), "mux transport (-transport) | io_uring")
}
