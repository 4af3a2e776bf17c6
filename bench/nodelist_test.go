package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redmux/redmux/bench/internal/report"
	"github.com/redmux/redmux/fakeserver"
	"github.com/stretchr/testify/require"
)

func TestSplitNodes(t *testing.T) {
	tests := []struct {
		list string
		want []string
	}{
		{"", []string{""}},
		{"a:1", []string{"a:1"}},
		{"a:1,b:2,", []string{"a:1", "b:2", ""}},
		{"redis://:pa,ss@h1:1,redis://:pw@h2:2,h3:3", []string{"redis://:pa,ss@h1:1", "redis://:pw@h2:2", "h3:3"}},
		// The input: one node, whose password holds a comma.
		{"redis://:secret123,x@host:6379", []string{"redis://:secret123,x@host:6379"}},
		{"redis://u:a,b,c@h1:1/2?db=2, rediss://:x,y@h2:2", []string{"redis://u:a,b,c@h1:1/2?db=2", " rediss://:x,y@h2:2"}},
		// An unescaped '/' in the password: still one node (parsing then
		// asks for %XX).
		{"redis://:a/b,c@h:1,h2:2", []string{"redis://:a/b,c@h:1", "h2:2"}},
		{"h1:1,redis://h2:2,h3:3", []string{"h1:1", "redis://h2:2", "h3:3"}},
		{"redis://h1:1,redis://h2:2", []string{"redis://h1:1", "redis://h2:2"}},
		// A comma in a query still splits (write %2C).
		{"redis://h1:1?client_name=a,b", []string{"redis://h1:1?client_name=a", "b"}},
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, splitNodes(tc.list), tc.list)
	}
}

// Issue 34 R11: a password holding a comma is one node's password, works,
// and is never printed; no error about a malformed address shows what may
// be a password.
func TestNodesPasswordWithComma(t *testing.T) {
	const pw = "pa,ss-9Zq"
	c, err := fakeserver.StartCluster(3, fakeserver.Config{Password: pw})
	require.NoError(t, err)
	defer c.Close()
	var urls []string
	for _, a := range c.Addrs() {
		urls = append(urls, "redis://:"+pw+"@"+a)
	}
	nodes := strings.Join(urls, ",")
	cfg, err := ParseArgs([]string{"-nodes", nodes}, noEnv)
	require.NoError(t, err)
	require.Equal(t, urls, cfg.Nodes)
	require.NotContains(t, cfg.Command, "pa,ss")
	require.NotContains(t, cfg.Command, "ss-9Zq")

	dir := filepath.Join(t.TempDir(), "out")
	var out, errb bytes.Buffer
	code := Main([]string{"-nodes", nodes, "-fresh-nodes", "-strategy", "all", "-c", "2", "-d", "200ms", "-warmup", "0s", "-timeout", "2s", "-out", dir}, &out, &errb, noEnv)
	require.Equal(t, ExitOK, code, errb.String())
	requireNoSecret(t, out.String()+errb.String(), "output")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.NotEmpty(t, entries)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		requireNoSecret(t, string(b), e.Name())
	}
	sum, err := os.ReadFile(filepath.Join(dir, report.FileSummary))
	require.NoError(t, err)
	require.Contains(t, string(sum), "redis://:***@"+c.Addrs()[0])
	require.Contains(t, string(sum), `"password_set": true`, "the nodes' URLs carry a password")

	// A wrong password with a comma: refused, never echoed.
	errb.Reset()
	out.Reset()
	bad := strings.ReplaceAll(nodes, pw, "wr,ong-7Kx")
	require.Equal(t, ExitFailure, Main([]string{"-nodes", bad, "-d", "100ms", "-out", ""}, &out, &errb, noEnv))
	require.Contains(t, errb.String(), "authentication failed")
	for _, part := range []string{"wr,ong", "ong-7Kx", "wr,"} {
		require.NotContains(t, out.String()+errb.String(), part)
	}
}

func requireNoSecret(t *testing.T, s, where string) {
	t.Helper()
	for _, part := range []string{"pa,ss", "ss-9Zq", "pa,"} {
		require.NotContains(t, s, part, where)
	}
}

// Malformed -nodes input never prints what may be a password: the
// userinfo of anything that looks like a URL, what follows a URL's host
// when it is no port, the part of a host:port before an '@'.
func TestNodesErrorsNeverShowPassword(t *testing.T) {
	tests := []struct {
		nodes string
		want  string // in the message
	}{
		{"redis://:secret123", `"redis://:***"`},
		{"redis://:secret123/0", `"redis://:***/0"`},
		{"redis://10.0.0.1:secret123", `"redis://10.0.0.1:***"`},
		{"redis://[::1]secret123", "the port is not a number"},
		{"redis://[::1:secret123", "the port is not a number"},
		{":secret123@10.0.0.1:6379", `"***@10.0.0.1:6379"`},
		{"secret123@10.0.0.1:6379", `"***@10.0.0.1:6379"`},
		{"10.0.0.1:6379,:secret123@10.0.0.2:6379", `"***@10.0.0.2:6379"`},
		{"redis://:secret123,x@10.0.0.1:port", "invalid port"},
		{"redis://:secret123,x@10.0.0.1:6379/x?db=1", "path"},
		{"redis://:sec/ret123,x@10.0.0.1:6379", "escape special characters of the password"},
		{"http://:secret123,x@10.0.0.1:6379", "scheme"},
		{"redis://:secret123,x@10.0.0.1:6379,redis://u:secret123@[::1", "missing ']'"},
	}
	for _, tc := range tests {
		_, err := ParseArgs([]string{"-nodes", tc.nodes}, noEnv)
		require.Error(t, err, tc.nodes)
		require.Contains(t, err.Error(), tc.want, tc.nodes)
		var out, errb bytes.Buffer
		require.Equal(t, ExitUsage, Main([]string{"-nodes", tc.nodes}, &out, &errb, noEnv), tc.nodes)
		msg := out.String() + errb.String()
		for _, part := range []string{"secret", "123", "ret1"} {
			require.NotContains(t, msg, part, "%s: %s", tc.nodes, msg)
		}
		require.Contains(t, msg, "***", tc.nodes)
	}
}

// Issue 34 R11: a password on the command line (-password or in a -nodes
// URL) gets redis-cli's warning on stderr, pointing to REDMUX_PASSWORD;
// one from the environment does not.
func TestPasswordOnCommandLineWarns(t *testing.T) {
	env := func(k string) string {
		if k == envPassword {
			return "env-pw-1"
		}
		return ""
	}
	// a generous -timeout: CI beside other work once saw all 16 seq operations
	// of a 50 ms run time out at the default
	run := []string{"-fake", "1", "-strategy", "seq", "-d", "50ms", "-warmup", "0s", "-timeout", "10s", "-out", ""}
	tests := []struct {
		args []string
		env  func(string) string
		warn bool
	}{
		{append([]string{"-password", "cli-pw-1"}, run...), noEnv, true},
		{append([]string{"--password=cli-pw-1"}, run...), noEnv, true},
		{append([]string{"sweep", "-password", "cli-pw-1", "-h"}, run[:2]...), noEnv, false}, // -h: nothing runs
		{run, env, false},
		{run, noEnv, false},
	}
	for _, tc := range tests {
		var out, errb bytes.Buffer
		code := Main(tc.args, &out, &errb, tc.env)
		require.Equal(t, ExitOK, code, "%v: %s", tc.args, errb.String())
		require.Equal(t, tc.warn, strings.Contains(errb.String(), passwordWarning), "%v: %q", tc.args, errb.String())
		require.NotContains(t, out.String()+errb.String(), "cli-pw-1")
		require.NotContains(t, out.String()+errb.String(), "env-pw-1")
	}
	require.Contains(t, passwordWarning, envPassword)
	require.Contains(t, passwordWarning, "may not be safe")

	// In a -nodes URL: warned before the run (here it fails: nothing listens).
	var out, errb bytes.Buffer
	require.Equal(t, ExitFailure, Main([]string{"-nodes", "redis://:url-pw-1@127.0.0.1:1", "-d", "50ms", "-out", ""}, &out, &errb, noEnv))
	lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
	require.Len(t, lines, 2, errb.String())
	require.Equal(t, passwordWarning, lines[0])
	require.Contains(t, lines[1], "unreachable")
	require.NotContains(t, errb.String(), "url-pw-1")
}

// withoutPasswordWarning returns stderr without the passwordWarning line
// that a run with a password on its command line prints first, and checks
// that the line, when there, is first and whole.
func withoutPasswordWarning(t *testing.T, stderr string) string {
	t.Helper()
	rest, ok := strings.CutPrefix(stderr, passwordWarning+"\n")
	if !ok {
		require.NotContains(t, stderr, passwordWarning, "the warning comes first")
	}
	return rest
}

// A redis-sentinel:// node's sentinel_password is a password too: hidden in
// the recorded command line (report.md, summary.json, the hlog header),
// scrubbed from errors, and warned about on the command line. It was
// recorded as given.
func TestSentinelPasswordHidden(t *testing.T) {
	node := "redis-sentinel://127.0.0.1:1?sentinelMasterId=locks&sentinel_password=SentPW77"
	cfg, err := ParseArgs([]string{"-nodes", node, "-strategy", "mux"}, noEnv)
	require.NoError(t, err)
	require.NotContains(t, cfg.Command, "SentPW77")
	require.Contains(t, cfg.Command, "sentinel_password=***")
	require.Contains(t, cfg.secrets(), "SentPW77")
	require.Contains(t, passwordsIn([]string{"-nodes", node}, nil), "SentPW77")
	require.Equal(t, "redis-sentinel://127.0.0.1:1?sentinelMasterId=locks&sentinel_password=***&sentinel=x", hideURLPasswords(node+"&sentinel=x"))
}
