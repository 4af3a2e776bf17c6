package bench

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redmux/redmux/internal/redisproc/redistest"
)

func TestShapeFlags(t *testing.T) {
	for want, args := range map[string][]string{
		"want standalone, cluster or sentinel": {"-real-local", "2", "-shape", "ring"},
		"-shape is for -real-local":            {"-shape", "cluster"},
		"-shards must be 1..16":                {"-real-local", "2", "-shape", "cluster", "-shards", "17"},
		"-shards is for -shape cluster":        {"-real-local", "2", "-shards", "2"},
		"plaintext":                            {"-real-local", "2", "-shape", "sentinel", "-tls"},
		"runs -strategy mux only":              {"-real-local", "2", "-shape", "cluster", "-strategy", "seq,mux"},
	} {
		_, err := ParseArgs(args, noEnv)
		require.ErrorIs(t, err, ErrUsage, "%v", args)
		require.Contains(t, err.Error(), want, "%v", args)
	}
	c, err := ParseArgs([]string{"-real-local", "2", "-shape", "cluster"}, noEnv)
	require.NoError(t, err)
	require.Equal(t, []string{strategyMux}, c.Strategies, "-strategy all with a cluster shape")

	// the same for cluster and Sentinel nodes given in -nodes: seq and
	// fanout are refused before anything runs, "all" is mux alone
	for _, node := range []string{"redis-cluster://127.0.0.1:7000?seed=127.0.0.1:7001", "redis-sentinel://127.0.0.1:26379?sentinelMasterId=m"} {
		for _, strategy := range []string{"seq", "fanout,mux"} {
			_, err := ParseArgs([]string{"-nodes", "127.0.0.1:7005," + node, "-strategy", strategy}, noEnv)
			require.ErrorIs(t, err, ErrUsage, "%s %s", node, strategy)
			require.Contains(t, err.Error(), "runs -strategy mux only", "%s %s", node, strategy)
		}
		c, err := ParseArgs([]string{"-nodes", node}, noEnv)
		require.NoError(t, err)
		require.Equal(t, []string{strategyMux}, c.Strategies, "-strategy all with %s", node)
	}
}

// -real-local -shape cluster starts one Redis Cluster per node, measures
// the mux strategy on them and says the shape in the report; a
// redis-cluster:// node in -nodes is refused by seq and fanout with the
// reason, and its password never shows.
func TestEndToEndClusterShape(t *testing.T) {
	redistest.Require(t)
	dir := t.TempDir()
	var out, errb bytes.Buffer
	code := Main([]string{"-real-local", "2", "-shape", "cluster", "-shards", "2", "-c", "2", "-d", "300ms", "-warmup", "0s", "-timeout", "5s",
		"-quiet", "-out", "", "-json", filepath.Join(dir, "a.json")}, &out, &errb, noEnv)
	require.Equal(t, ExitOK, code, errb.String())
	rep := readReport(t, filepath.Join(dir, "a.json"))
	require.Contains(t, rep.Config.Target, "2 local Redis Clusters of 2 primaries each")
	require.Len(t, rep.Strategies, 1)
	require.Positive(t, rep.Strategies[0].Acquired)
	for _, n := range rep.Config.Nodes {
		require.True(t, strings.HasPrefix(n, "redis-cluster://"), n)
	}
	// Issue 48 item 4: the commandstats it did not read are said to be
	// not read, not zeros.
	if sv := rep.Strategies[0].Server; sv != nil {
		require.Zero(t, sv.NodesReporting)
		require.Contains(t, sv.NotRead, "not asked through redis-cluster:// nodes")
	}

	pc := newPlainConn("redis-cluster://:cl-secret@127.0.0.1:7000?seed=127.0.0.1:7001", &connOpts{})
	require.Error(t, pc.perr)
	require.Contains(t, pc.perr.Error(), "-strategy mux")
	require.NotContains(t, pc.perr.Error(), "cl-secret")
}
