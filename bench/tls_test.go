package bench

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redmux/redmux/bench/internal/report"
	"github.com/redmux/redmux/internal/redisproc"
	"github.com/redmux/redmux/internal/redisproc/redistest"
)

func TestParseTLSAndURLErrors(t *testing.T) {
	cases := map[string][]string{
		"need -tls":                    {"-nodes", "127.0.0.1:1", "-cacert", "x.pem"},
		"embedded fake cluster speaks": {"-tls"},
		"makes its own certificates":   {"-real-local", "3", "-tls", "-cacert", "x.pem"},
		"-cert and -key go together":   {"-nodes", "127.0.0.1:1", "-tls", "-cert", "c.pem"},
		"unknown option":               {"-nodes", "redis://:pw-in-url@127.0.0.1:1?bogus=1"},
		"want redis, rediss":           {"-nodes", "http://127.0.0.1:1"},
		"write rediss://":              {"-nodes", "redis://:pw-in-url@127.0.0.1:1", "-tls"},
	}
	for want, args := range cases {
		_, err := ParseArgs(args, noEnv)
		require.Error(t, err, "%v", args)
		require.ErrorIs(t, err, ErrUsage, "%v", args)
		require.Contains(t, err.Error(), want, "%v", args)
		require.NotContains(t, err.Error(), "pw-in-url")
	}
	files := redistest.Certs(t, redisproc.CertOptions{})
	c, err := ParseArgs([]string{"-nodes", "redis://:pw%2Fin-url@127.0.0.1:7000/2,rediss://bob:bobs-pw@h:7001?cacert=" + files.CAFile, "-c", "2"}, noEnv)
	require.NoError(t, err)
	require.Equal(t, "redmux-bench -nodes 'redis://:***@127.0.0.1:7000/2,rediss://bob:***@h:7001?cacert="+files.CAFile+"' -c 2", c.Command)
	require.ElementsMatch(t, []string{"pw/in-url", "pw%2Fin-url", "bobs-pw"}, c.secrets())
	// A usage error next to a URL password does not echo it.
	_, err = ParseArgs([]string{"-nodes=redis://:pw-in-url@127.0.0.1:7000", "-c", "pw-in-url"}, noEnv)
	require.Error(t, err)
	require.NotContains(t, err.Error(), "pw-in-url")
}

// TestEndToEndRealTLS runs every strategy against TLS-only redis-servers:
// started by -real-local -tls with certificates made for the run, and
// given as rediss:// URLs with a password and a CA file in -nodes. The
// password appears in no output or file.
func TestEndToEndRealTLS(t *testing.T) {
	redistest.RequireTLS(t)
	args := []string{"-strategy", "all", "-c", "2", "-d", "300ms", "-warmup", "0s", "-timeout", "1s", "-quiet"}

	dir := t.TempDir()
	var out, errb bytes.Buffer
	code := Main(append([]string{"-real-local", "3", "-tls", "-out", "", "-json", filepath.Join(dir, "a.json")}, args...), &out, &errb, noEnv)
	require.Equal(t, ExitOK, code, errb.String())
	rep := readReport(t, filepath.Join(dir, "a.json"))
	require.True(t, rep.Config.TLS)
	require.Contains(t, rep.Config.Target, "over TLS")
	for _, s := range rep.Strategies {
		require.Positive(t, s.Acquired, s.Name)
	}

	const pw = "tls-url-secret"
	files := redistest.Certs(t, redisproc.CertOptions{})
	servers := redistest.StartN(t, 3, redistest.Options{TLS: files, Password: pw})
	var urls []string
	for _, s := range servers {
		urls = append(urls, "rediss://:"+pw+"@"+s.Addr+"?cacert="+files.CAFile)
	}
	out.Reset()
	errb.Reset()
	code = Main(append([]string{"-nodes", strings.Join(urls, ","), "-fresh-nodes", "-out", dir, "-force", "-json", filepath.Join(dir, "b.json")}, args...), &out, &errb, noEnv)
	require.Equal(t, ExitOK, code, errb.String())
	rep = readReport(t, filepath.Join(dir, "b.json"))
	for i, n := range rep.Config.Nodes {
		require.Equal(t, "rediss://:***@"+servers[i].Addr, n)
	}
	for _, s := range rep.Strategies {
		require.Positive(t, s.Acquired, s.Name)
	}
	all := out.String() + errb.String()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		all += string(b)
	}
	require.NotContains(t, all, pw)

	// The wrong CA: a run failure in one line naming the node and the
	// reason, without the password.
	other := redistest.Certs(t, redisproc.CertOptions{})
	out.Reset()
	errb.Reset()
	code = Main([]string{"-nodes", strings.ReplaceAll(strings.Join(urls, ","), files.CAFile, other.CAFile), "-d", "100ms", "-out", ""}, &out, &errb, noEnv)
	require.Equal(t, ExitFailure, code)
	require.Equal(t, 1, strings.Count(withoutPasswordWarning(t, errb.String()), "\n"), errb.String())
	require.Contains(t, errb.String(), "rediss://:***@"+servers[0].Addr)
	require.Contains(t, errb.String(), "certificate signed by unknown authority")
	require.NotContains(t, out.String()+errb.String(), pw)
}

func readReport(t *testing.T, file string) report.Report {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	var rep report.Report
	require.NoError(t, json.Unmarshal(b, &rep))
	return rep
}
