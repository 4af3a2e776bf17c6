package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redmux/redmux/bench/internal/hlog"
	"github.com/redmux/redmux/bench/internal/report"
	"github.com/redmux/redmux/fakeserver"
)

// Every error path of the command prints one line with one "bench:" in it:
// the "redmux-bench:" prefix, never a doubled "bench: ... bench:" from
// errors wrapped twice.
func TestErrorsHaveOnePrefix(t *testing.T) {
	c, err := fakeserver.StartCluster(1, fakeserver.Config{Password: "needed-pw"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.hlog")
	if err := os.WriteFile(junk, []byte("not a log\n1,2,3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := []string{"-d", "100ms", "-warmup", "0s", "-out", ""}
	tests := []struct {
		name string
		args []string
		code int
		want string // part of the message
	}{
		{"usage", []string{"-bogus"}, ExitUsage, "flag provided but not defined"},
		{"unreachable", append([]string{"-nodes", "127.0.0.1:1"}, run...), ExitFailure, "node unreachable"},
		{"server error reply", append([]string{"-fake", "1", "-db", "99"}, run...), ExitFailure, "DB index is out of range"},
		{"sweep server error reply", []string{"sweep", "-fake", "1", "-db", "99", "-out", ""}, ExitFailure, "DB index is out of range"},
		{"password required", append([]string{"-nodes", c.Addrs()[0]}, run...), ExitFailure, "authentication required"},
		{"wrong password", append([]string{"-nodes", c.Addrs()[0], "-password", "wrong-pw"}, run...), ExitFailure, "authentication failed"},
		{"merge bad log", []string{"merge", junk}, ExitFailure, "bad HdrHistogram interval log"},
		{"merge missing", []string{"merge", filepath.Join(dir, "missing.hlog")}, ExitFailure, "missing.hlog"},
		{"compare bad", []string{"compare", junk, junk}, ExitFailure, "junk.hlog"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Main(tc.args, &out, &errb, noEnv)
			msg := withoutPasswordWarning(t, errb.String())
			if code != tc.code {
				t.Fatalf("exit %d, want %d: %q", code, tc.code, msg)
			}
			if !strings.HasPrefix(msg, "redmux-bench: ") || strings.Count(msg, "\n") != 1 {
				t.Fatalf("want one line starting redmux-bench: , got %q", msg)
			}
			if n := strings.Count(msg, "bench:"); n != 1 {
				t.Errorf("%d times \"bench:\" in %q", n, msg)
			}
			if !strings.Contains(msg, tc.want) {
				t.Errorf("%q does not say %q", msg, tc.want)
			}
			if strings.Contains(msg, "wrong-pw") {
				t.Errorf("password shown: %q", msg)
			}
		})
	}
	for _, e := range []error{errAuth, errAuthRequired, errServerReply, errNoQuorum, errValidity, errReplyTooBig, hlog.ErrBad, report.ErrNotSteady, ErrUsage, errNodeUnreachable, ErrInterrupted, ErrMostlyFailed} {
		if strings.Contains(e.Error(), "bench:") {
			t.Errorf("sentinel %q carries a prefix; the command adds its own", e)
		}
	}
}
