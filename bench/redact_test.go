package bench

import (
	"bytes"
	"strings"
	"testing"

	"github.com/redmux/redmux/fakeserver"
	"github.com/stretchr/testify/require"
)

// Issue 16 D10: the password never appears in a message, however it was
// given (environment or flag, before or after the bad flag).
func TestUsageErrorsNeverEchoThePassword(t *testing.T) {
	const pw = "secret123"
	envPW := func(k string) string {
		if k == envPassword {
			return pw
		}
		return ""
	}
	cases := []struct {
		args []string
		env  func(string) string
	}{
		{[]string{"-c", pw}, envPW},
		{[]string{"-nodes", pw}, envPW},
		{[]string{"-nodes", "10.0.0.1:6379," + pw}, envPW},
		{[]string{"-strategy", pw}, envPW},
		{[]string{"-workload", pw}, envPW},
		{[]string{"-fault", "slow:1:" + pw}, envPW},
		{[]string{"-d", pw}, envPW},
		{[]string{pw}, envPW},
		{[]string{"-c", pw, "-password", pw}, noEnv},    // the flag comes after the bad one
		{[]string{"-c", pw, "--password=" + pw}, noEnv}, // -flag=value form
		{[]string{"-password", pw, "-nodes", pw}, noEnv},
		{[]string{"-password", pw, "-bogus-" + pw}, noEnv},
	}
	for _, tc := range cases {
		_, err := ParseArgs(tc.args, tc.env)
		require.Error(t, err, "%v", tc.args)
		require.NotContains(t, err.Error(), pw, "%v", tc.args)
		require.Contains(t, err.Error(), "***", "%v: the redaction is visible", tc.args)

		var out, errb bytes.Buffer
		code := Main(tc.args, &out, &errb, tc.env)
		require.Equal(t, ExitUsage, code, "%v", tc.args)
		require.NotContains(t, out.String()+errb.String(), pw, "%v", tc.args)
	}
}

// A server that requires a password, and none was given: the run fails with
// a message that says so (not "node unreachable").
func TestMissingPasswordSaysAuthenticationRequired(t *testing.T) {
	c, err := fakeserver.StartCluster(3, fakeserver.Config{Password: "needed-pw"})
	require.NoError(t, err)
	defer c.Close()
	nodes := strings.Join(c.Addrs(), ",")
	for _, strategy := range []string{"all", strategyMux} {
		var out, errb bytes.Buffer
		code := Main([]string{"-nodes", nodes, "-strategy", strategy, "-d", "100ms", "-warmup", "0s", "-out", ""}, &out, &errb, noEnv)
		require.Equal(t, ExitFailure, code, strategy)
		msg := errb.String()
		require.Equal(t, 1, strings.Count(msg, "\n"), "one line: %q", msg)
		require.Contains(t, msg, "authentication required (set REDMUX_PASSWORD or -password)", strategy)
		require.NotContains(t, msg, "unreachable", strategy)
	}

	// The mux strategy checks on its own (it does not rely on preflight).
	p := lockParams{TTL: 10e9, Timeout: 50e6, DialTimeout: 1e9, DriftFactor: 0.01, DriftFixed: 2e6}
	_, err = newMuxStrategy(c.Addrs(), p, 2)
	require.ErrorIs(t, err, errAuthRequired)
	require.Contains(t, err.Error(), "authentication required (set REDMUX_PASSWORD or -password)")

	// A wrong password is still "authentication failed", never echoed.
	var out, errb bytes.Buffer
	code := Main([]string{"-nodes", nodes, "-d", "100ms", "-out", "", "-password", "wrong-pw-9"}, &out, &errb, noEnv)
	require.Equal(t, ExitFailure, code)
	require.Contains(t, errb.String(), "authentication failed")
	require.NotContains(t, out.String()+errb.String(), "wrong-pw-9")
}
