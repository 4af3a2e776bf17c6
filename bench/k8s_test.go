package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redmux/redmux/bench/internal/report"

	"github.com/stretchr/testify/require"
)

// The Kubernetes Indexed Job that runs the segments (issue 36 item 7).
const (
	k8sJobManifest = "../deploy/k8s/redmux-bench-job.yaml"
	k8sMergeScript = "../deploy/k8s/merge.sh"
)

// k8sJob is what the test reads of the manifest: no YAML library, only
// the few lines it needs.
type k8sJob struct {
	mode                     string
	completions, parallelism int
	env                      map[string]string // the container's env values (not valueFrom)
	bench                    string            // the script's redmux-bench line
}

func parseK8sJob(t *testing.T, text string) k8sJob {
	t.Helper()
	j := k8sJob{env: map[string]string{}}
	field := func(name string) string {
		m := regexp.MustCompile(`(?m)^\s+`+name+`:\s*(\S+)\s*$`).FindAllStringSubmatch(text, -1)
		require.Len(t, m, 1, "%s: one %s: line", k8sJobManifest, name)
		return m[0][1]
	}
	num := func(name string) int {
		n, err := strconv.Atoi(field(name))
		require.NoError(t, err, name)
		return n
	}
	j.mode, j.completions, j.parallelism = field("completionMode"), num("completions"), num("parallelism")
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		tl := strings.TrimSpace(l)
		if name, ok := strings.CutPrefix(tl, "- name: "); ok && i+1 < len(lines) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(lines[i+1]), "value: "); ok {
				j.env[name] = strings.Trim(v, `"`)
			}
		}
		if strings.HasPrefix(tl, "redmux-bench ") {
			require.Empty(t, j.bench, "one redmux-bench line")
			j.bench = tl
		}
	}
	require.NotEmpty(t, j.bench, "the script's redmux-bench line")
	return j
}

// shellWords splits a simple sh command line (words, double quotes, $VAR
// and ${VAR} expanded from env; it stops at || or ;), as the pod's shell
// would.
func shellWords(t *testing.T, line string, env func(string) string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	inWord, quoted := false, false
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case ch == '"':
			quoted, inWord = !quoted, true
		case ch == '$':
			j := i + 1
			brace := j < len(line) && line[j] == '{'
			if brace {
				j++
			}
			k := j
			for k < len(line) && (line[k] == '_' || line[k] >= 'A' && line[k] <= 'Z' || line[k] >= 'a' && line[k] <= 'z' || line[k] >= '0' && line[k] <= '9') {
				k++
			}
			require.Greater(t, k, j, "a bare $ in %q", line)
			cur.WriteString(env(line[j:k]))
			if brace {
				require.Equal(t, byte('}'), line[k], "unclosed ${ in %q", line)
				k++
			}
			i, inWord = k-1, true
		case !quoted && (ch == ' ' || ch == '\t'):
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case !quoted && (ch == ';' || ch == '|' && i+1 < len(line) && line[i+1] == '|'):
			i = len(line)
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	require.False(t, quoted, "unclosed quote in %q", line)
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// The manifest is an Indexed Job of n pods, n at once, whose index k (the
// JOB_COMPLETION_INDEX Kubernetes sets) runs `-segment k/n` of one run:
// its command line parses for every index, and the n segments cover 0..n-1
// exactly once, with workers, keys and rate adding up to the whole run's.
// The merge script reads as many logs as the Job has completions.
func TestK8sIndexedJobCoversEverySegmentOnce(t *testing.T) {
	text, err := os.ReadFile(k8sJobManifest)
	require.NoError(t, err)
	j := parseK8sJob(t, string(text))
	require.Equal(t, "Indexed", j.mode)
	n := j.completions
	require.GreaterOrEqual(t, n, 2)
	require.Equal(t, n, j.parallelism, "every segment runs at once")
	require.Equal(t, strconv.Itoa(n), j.env["SEGMENTS"], "SEGMENTS is the completions")
	require.Contains(t, j.bench, `-segment "$JOB_COMPLETION_INDEX/$SEGMENTS"`)
	require.Contains(t, string(text), "__START_AT__", "START_AT is filled in at apply time")

	startAt := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	seen := map[int]int{}
	nextWorker, nextKey := 0, 0
	var total report.SegmentInfo
	rate := 0.0
	for k := 0; k < n; k++ {
		env := func(name string) string {
			switch name {
			case "JOB_COMPLETION_INDEX":
				return strconv.Itoa(k)
			case "START_AT":
				return startAt
			}
			v, ok := j.env[name]
			require.True(t, ok, "$%s is not in the container's env", name)
			return v
		}
		words := shellWords(t, j.bench, env)
		require.Equal(t, "redmux-bench", words[0])
		c, err := ParseArgs(words[1:], func(string) string { return "" })
		require.NoError(t, err, "index %d: %q", k, words)
		require.Equal(t, n, c.Segment.Count, "index %d", k)
		seen[c.Segment.Index]++
		if k == 0 {
			total = c.SegmentOf
			require.True(t, total.KeysSplit)
		}
		require.Equal(t, total.TotalWorkers, c.SegmentOf.TotalWorkers)
		require.Equal(t, total.TotalKeys, c.SegmentOf.TotalKeys)
		require.Equal(t, nextKey, c.KeyFirst, "index %d: keys start where the last segment's ended", k)
		nextWorker, nextKey, rate = nextWorker+c.Workers, nextKey+c.Keys, rate+c.Rate
	}
	for i := 0; i < n; i++ {
		require.Equal(t, 1, seen[i], "segment %d/%d: run %d times", i, n, seen[i])
	}
	require.Len(t, seen, n)
	require.Equal(t, total.TotalWorkers, nextWorker)
	require.Equal(t, total.TotalKeys, nextKey)
	require.InEpsilon(t, total.TotalRate, rate, 1e-12)

	script, err := os.ReadFile(k8sMergeScript)
	require.NoError(t, err)
	for _, s := range []string{"{.spec.completions}", `while [ "$k" -lt "$n" ]`, "batch.kubernetes.io/job-completion-index=$k", " merge -out "} {
		require.Contains(t, string(script), s)
	}
	for _, marker := range []string{"=== redmux-bench hlog begin", "=== redmux-bench hlog end"} {
		require.Contains(t, string(text), marker)
		require.Contains(t, string(script), marker)
	}
	t.Logf("%d segments of -rate %g, -c %d, -keys %d: %s", n, total.TotalRate, total.TotalWorkers, total.TotalKeys, fmt.Sprint(seen))
}

// runMergeScript runs deploy/k8s/merge.sh for Job redmux-bench into out
// with a stand-in kubectl (the body of a sh script) and redmux-bench (which
// prints its command line) first on the PATH; it returns the exit status,
// stdout and stderr.
func runMergeScript(t *testing.T, kubectl, out string) (int, string, string) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("merge.sh is a POSIX shell script")
	}
	script, err := filepath.Abs(k8sMergeScript)
	require.NoError(t, err)
	bin := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bin, "kubectl"), []byte("#!/bin/sh\n"+kubectl+"\nexit 0\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "redmux-bench"), []byte("#!/bin/sh\necho \"redmux-bench $*\"\n"), 0o755))
	cmd := exec.Command("/bin/sh", script, "redmux-bench", out)
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "MERGE_TIMEOUT=0")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	rc := 0
	if ee, ok := err.(*exec.ExitError); ok {
		rc = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return rc, stdout.String(), stderr.String()
}

// Issue 48 item 5: merge.sh stops waiting as soon as the Job is Failed
// (before: kubectl wait --for=condition=complete waited its full 30
// minutes), names the failed pods, merges the segments it has and exits
// 1; a Complete Job merges every segment and exits 0. Here no pod is
// ready to be copied from, so the interval logs come from the pods'
// output (what a pod prints when nobody fetched within HLOG_WAIT).
func TestK8sMergeStopsWhenTheJobFails(t *testing.T) {
	for _, c := range []struct {
		state string
		rc    int
	}{{"Failed", 1}, {"FailureTarget Failed", 1}, {"Complete", 0}} {
		out := t.TempDir()
		rc, stdout, stderr := runMergeScript(t, `case "$*" in
*"{.spec.completions}"*) echo 2 ;;
*".status.conditions"*) printf '%s' "`+c.state+`" ;;
"get pods"*"status.phase=Failed"*) echo "redmux-bench-1-x7k2p (segment 1)" ;;
"logs --tail=-1"*"completion-index=0"*) printf '%s\n' progress "=== redmux-bench hlog begin segment 0/2" "#[hlog of segment 0]" "=== redmux-bench hlog end" ;;
"logs --tail=-1"*"completion-index=1"*) [ "`+c.state+`" = Complete ] && printf '%s\n' "=== redmux-bench hlog begin segment 1/2" "#[hlog of segment 1]" "=== redmux-bench hlog end" ;;
esac`, out)
		require.Equal(t, c.rc, rc, "%s: stdout %s stderr %s", c.state, stdout, stderr)
		require.Contains(t, stdout, "redmux-bench merge -out "+out+"/merged "+out+"/segment-0.hlog")
		seg0, err := os.ReadFile(filepath.Join(out, "segment-0.hlog"))
		require.NoError(t, err)
		require.Equal(t, "#[hlog of segment 0]\n", string(seg0))
		if c.rc == 1 {
			require.Contains(t, stderr, "job redmux-bench failed")
			require.Contains(t, stderr, "redmux-bench-1-x7k2p (segment 1)")
			require.Contains(t, stderr, "no interval log from segment 1/2")
			require.NotContains(t, stderr, "did not finish within")
		} else {
			require.Contains(t, stdout, out+"/segment-1.hlog")
			require.Empty(t, stderr)
		}
	}
}

// Issue 48 item 5: an hour-long run's interval log (~8 MB) stays out of
// the pod's log: the pod says it is ready and waits (HLOG_WAIT), merge.sh
// copies the file (kubectl cp) and lets the pod go (exec touch
// /out/fetched); the pod prints the log only when nobody fetched it.
func TestK8sIntervalLogStaysOutOfThePodLog(t *testing.T) {
	out, touched := t.TempDir(), filepath.Join(t.TempDir(), "touched")
	rc, stdout, stderr := runMergeScript(t, `case "$*" in
*"{.spec.completions}"*) echo 2 ;;
*".status.conditions"*) printf 'Complete' ;;
"get pods -l job-name=redmux-bench,batch.kubernetes.io/job-completion-index="*) echo "pod-${4##*=}" ;;
"logs --tail=5 pod-"*) echo "=== redmux-bench hlog ready segment x/2: /out/bench.hlog" ;;
"cp pod-"*":/out/bench.hlog "*) p=${2%%:*}; echo "#[copied from $p]" >"$3" ;;
"exec pod-"*" -- touch /out/fetched") echo "$2" >>"`+touched+`" ;;
"logs --tail=-1"*) echo "=== redmux-bench hlog begin"; echo "#[from the pod log]"; echo "=== redmux-bench hlog end" ;;
esac`, out)
	require.Equal(t, 0, rc, "stdout %s stderr %s", stdout, stderr)
	for k := 0; k < 2; k++ {
		b, err := os.ReadFile(filepath.Join(out, fmt.Sprintf("segment-%d.hlog", k)))
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("#[copied from pod-%d]\n", k), string(b))
	}
	b, err := os.ReadFile(touched)
	require.NoError(t, err)
	require.Equal(t, "pod-0\npod-1\n", string(b), "each pod let go once")
	require.Contains(t, stdout, "redmux-bench merge -out "+out+"/merged "+out+"/segment-0.hlog "+out+"/segment-1.hlog")

	// The pod's side: its script, with /out in a temporary directory and
	// a stand-in redmux-bench that writes an interval log.
	text, err := os.ReadFile(k8sJobManifest)
	require.NoError(t, err)
	podScript := podArgs(t, string(text))
	for _, fetched := range []bool{true, false} {
		dir, bin := t.TempDir(), t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(bin, "redmux-bench"), []byte("#!/bin/sh\necho '#[interval log]' >"+dir+"/bench.hlog\nexit 3\n"), 0o755))
		if fetched {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "fetched"), nil, 0o644))
		}
		cmd := exec.Command("/bin/sh", "-c", strings.ReplaceAll(podScript, "/out", dir))
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "HLOG_WAIT=0", "JOB_COMPLETION_INDEX=1", "SEGMENTS=2",
			"NODES=x", "START_AT=now", "RATE=1", "WORKERS=1", "KEYS=1", "DURATION=1s")
		b, err := cmd.CombinedOutput()
		ee, ok := err.(*exec.ExitError)
		require.True(t, ok && ee.ExitCode() == 3, "the pod exits with redmux-bench's status: %v %s", err, b)
		require.Contains(t, string(b), "=== redmux-bench hlog ready segment 1/2: ")
		if fetched {
			require.NotContains(t, string(b), "#[interval log]", "fetched: not in the pod log")
		} else {
			require.Contains(t, string(b), "=== redmux-bench hlog begin segment 1/2\n#[interval log]\n=== redmux-bench hlog end")
		}
	}
}

// podArgs is the pod's shell script: the block under "args: - |".
func podArgs(t *testing.T, manifest string) string {
	t.Helper()
	_, rest, ok := strings.Cut(manifest, "args:\n")
	require.True(t, ok)
	lines := strings.Split(rest, "\n")
	require.Equal(t, "- |", strings.TrimSpace(lines[0]))
	var b strings.Builder
	indent := ""
	for _, l := range lines[1:] {
		if indent == "" {
			indent = l[:len(l)-len(strings.TrimLeft(l, " "))]
		}
		if !strings.HasPrefix(l, indent) {
			break
		}
		b.WriteString(strings.TrimPrefix(l, indent) + "\n")
	}
	return b.String()
}
