package bench

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/redmux/redmux/bench/load"
	"github.com/stretchr/testify/require"
)

func noEnv(string) string { return "" }

func TestParseDefaults(t *testing.T) {
	c, err := ParseArgs(nil, noEnv)
	require.NoError(t, err)
	require.Equal(t, 5, c.Fake)
	require.Empty(t, c.Nodes)
	require.Equal(t, allStrategies, c.Strategies)
	require.Equal(t, 16, c.Workers)
	require.Equal(t, 5*time.Second, c.Duration)
	require.Equal(t, defaultOut, c.Out)
	require.Equal(t, load.WorkloadAcquireRelease, c.Workload)
	// The default run must fit in 30 s: strategies x (warm-up + duration).
	require.Less(t, time.Duration(len(c.Strategies))*(c.Duration+c.Warmup), 25*time.Second)
}

func TestParseValues(t *testing.T) {
	c, err := ParseArgs([]string{"-nodes", "10.0.0.1:6379, 10.0.0.2:6379,[::1]:7000", "-strategy", "seq,mux", "-c", "3",
		"-n", "1000", "-keys", "7", "-ttl", "2s", "-rate", "500", "-workload", "acquire-extend-release",
		"-user", "u", "-password", "pw", "-db", "2", "-json", "x.json", "-hlog", "x.hlog", "-out", "", "-quiet"}, noEnv)
	require.NoError(t, err)
	require.Equal(t, []string{"10.0.0.1:6379", "10.0.0.2:6379", "[::1]:7000"}, c.Nodes)
	require.Equal(t, []string{"seq", "mux"}, c.Strategies)
	require.Equal(t, int64(1000), c.Ops)
	require.Zero(t, c.Duration)
	require.Equal(t, 7, c.Keys)
	require.Equal(t, 500.0, c.Rate)
	require.Equal(t, "", c.Out)
	require.True(t, c.Quiet)

	c, err = ParseArgs([]string{"-workload", "contended", "-latency", "1ms", "-fault", "slow:1:10ms", "-fault", "down:4", "-fault", "blackhole:0"}, noEnv)
	require.NoError(t, err)
	require.Equal(t, 1, c.Keys, "contended defaults to one key")
	require.Equal(t, time.Millisecond, c.Latency)
	require.Equal(t, []Fault{{Kind: "slow", Node: 1, Fixed: 10 * time.Millisecond}, {Kind: "down", Node: 4}, {Kind: "blackhole", Node: 0}}, c.Faults)
}

func TestParseErrors(t *testing.T) {
	cases := map[string][]string{
		"flag provided but not defined":        {"-bogus"},
		"invalid value":                        {"-d", "fast"},
		"-d must be positive":                  {"-d", "-1s"},
		"-n must be positive":                  {"-n", "0"},
		"exclusive":                            {"-d", "1s", "-n", "10"},
		"-c must be":                           {"-c", "0"},
		"-keys must be":                        {"-keys", "0"},
		"-ttl must be":                         {"-ttl", "0s"},
		"unknown -strategy":                    {"-strategy", "fast"},
		"unknown -workload":                    {"-workload", "x"},
		"bad -fault":                           {"-fault", "slow:1"},
		"does not exist":                       {"-fault", "down:5"},
		"unknown kind":                         {"-fault", "melt:1"},
		"embedded cluster only":                {"-nodes", "127.0.0.1:1", "-fault", "down:1"},
		"cannot be combined":                   {"-nodes", "127.0.0.1:1", "-fake", "3"},
		"bad -nodes address":                   {"-nodes", "localhost"},
		"unexpected argument":                  {"extra"},
		"-rate must not be negative":           {"-rate", "-5"},
		"-real-local must be":                  {"-real-local", "-1"},
		"-real-local must be 1..64, got 0":     {"-real-local", "0"},
		"-nodes is empty":                      {"-nodes", ""},
		"-nodes is empty (an unset":            {"-nodes", " "},
		"are one server (127.0.0.1:7000)":      {"-nodes", "127.0.0.1:7000,localhost:7000,127.0.0.1:7001"},
		"addresses 0 \"127.0.0.1:7000\" and 2": {"-nodes", "127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7000"},
		"one server (127.0.0.1:7002)":          {"-nodes", "redis://:pw@127.0.0.1:7002/1,127.0.0.1:7002,127.0.0.1:7003"},
	}
	for want, args := range cases {
		_, err := ParseArgs(args, noEnv)
		require.Error(t, err, "%v", args)
		require.ErrorIs(t, err, ErrUsage, "%v", args)
		require.Contains(t, err.Error(), want, "%v", args)
	}
	_, err := ParseArgs([]string{"-h"}, noEnv)
	require.ErrorIs(t, err, flag.ErrHelp)
}

func TestPasswordFromEnvAndRedacted(t *testing.T) {
	env := func(k string) string {
		if k == envPassword {
			return "s3cret-env"
		}
		return ""
	}
	c, err := ParseArgs(nil, env)
	require.NoError(t, err)
	require.Equal(t, "s3cret-env", c.Password)
	require.NotContains(t, c.Command, "s3cret")

	c, err = ParseArgs([]string{"-password", "s3cret-flag", "-c", "2"}, env)
	require.NoError(t, err)
	require.Equal(t, "s3cret-flag", c.Password, "the flag wins over the environment")
	require.Equal(t, "redmux-bench -password '***' -c 2", c.Command)

	c, err = ParseArgs([]string{"--password=s3cret-flag"}, env)
	require.NoError(t, err)
	require.NotContains(t, c.Command, "s3cret")

	// A bad flag next to the password does not echo it.
	_, err = ParseArgs([]string{"-password", "s3cret-flag", "-c", "s3cret-flag"}, env)
	require.Error(t, err)
	require.NotContains(t, err.Error(), "s3cret")
}

func TestMainUsageExitCodes(t *testing.T) {
	for _, args := range [][]string{{"-bogus"}, {"-d", "soon"}, {"merge"}, {"merge", "-x"}, {"-strategy", "nope"},
		// refused before anything runs (they failed after "measuring:", exit 1)
		{"-nodes", "127.0.0.1:99999"}, {"-nodes", "127.0.0.1:0"}, {"-ttl", "2ms"}, {"-user", "app"},
		{"-nodes", "127.0.0.1:7000", "-tls", "-cacert", "/nonexistent/ca.pem"},
		// issue 46: they ran the embedded fake cluster (or one server three times) and exited 0
		{"-nodes", ""}, {"-real-local", "0"}, {"-nodes", "127.0.0.1:7000,127.0.0.1:7000,127.0.0.1:7000"}} {
		var out, errb bytes.Buffer
		code := Main(args, &out, &errb, noEnv)
		require.Equal(t, ExitUsage, code, "%v", args)
		msg := errb.String()
		require.Equal(t, 1, strings.Count(msg, "\n"), "one line: %q", msg)
		require.True(t, strings.HasPrefix(msg, "redmux-bench: "), msg)
		require.NotContains(t, msg, "goroutine")
		require.Empty(t, out.String())
	}
	var out, errb bytes.Buffer
	require.Equal(t, ExitOK, Main([]string{"-h"}, &out, &errb, noEnv))
	require.Contains(t, out.String(), "-strategy")
	require.Contains(t, out.String(), "merge FILE")
}

func TestMainRunFailureExitCodes(t *testing.T) {
	// Nothing listens on port 1 of the loopback interface.
	var out, errb bytes.Buffer
	code := Main([]string{"-nodes", "127.0.0.1:1", "-d", "100ms", "-out", "", "-password", "pw-never-shown"}, &out, &errb, noEnv)
	require.Equal(t, ExitFailure, code)
	msg := withoutPasswordWarning(t, errb.String())
	require.Equal(t, 1, strings.Count(msg, "\n"), "one line: %q", msg)
	require.Contains(t, msg, "127.0.0.1:1")
	require.Contains(t, msg, "unreachable")
	require.NotContains(t, msg+out.String(), "pw-never-shown")

	var mout, merr bytes.Buffer
	require.Equal(t, ExitFailure, Main([]string{"merge", t.TempDir() + "/missing.hlog"}, &mout, &merr, noEnv))
	require.Equal(t, 1, strings.Count(merr.String(), "\n"))
}

func TestParseFaultStrings(t *testing.T) {
	f, err := ParseFault("slow:2:10ms:5ms")
	require.NoError(t, err)
	require.Equal(t, Fault{Kind: "slow", Node: 2, Fixed: 10 * time.Millisecond, Jitter: 5 * time.Millisecond}, f)
	require.Equal(t, "slow:2:10ms:5ms", f.String())
	for _, bad := range []string{"", "down", "down:-1", "down:x", "down:1:2", "slow:1:fast", "slow:1:-1ms", "slow:1:1ms:x", "blackhole:1:1"} {
		_, err := ParseFault(bad)
		require.Error(t, err, bad)
	}
	require.False(t, errors.Is(err, ErrUsage)) // ParseFault errors are plain; ParseArgs wraps them
}

// A run against a URL node that refuses connections fails, naming the
// node, and no output shows the URL's password (TestParseTLSAndURLErrors
// covers the parsing and the recorded command line).
func TestNodesURLs(t *testing.T) {
	const pw = "url-pw-never-shown"
	var out, errb bytes.Buffer
	code := Main([]string{"-nodes=redis://alice:" + pw + "@127.0.0.1:1/3", "-d", "100ms", "-out", ""}, &out, &errb, noEnv)
	require.Equal(t, ExitFailure, code)
	require.NotContains(t, out.String()+errb.String(), pw)
	require.Contains(t, errb.String(), "127.0.0.1:1")
}
