//go:build unix

package bench

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Issue 12 item 4: SIGINT stops the run cleanly: the finished strategy's
// results and the interrupted one's measured part are written, marked
// interrupted, and the exit status is 130.
func TestSIGINTKeepsFinishedResults(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	dir := t.TempDir()
	cmd := exec.Command(exe, "-fake", "3", "-strategy", "seq,mux", "-c", "2", "-d", "2s", "-warmup", "0s",
		"-progress", "1s", "-out", dir)
	cmd.Env = append(os.Environ(), envRunMain+"=1")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	killed := false
	defer func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()

	// Wait for mux's first progress line (seq has finished by then), then
	// interrupt; mux's measured window is 2s, so it is cut short.
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var got []string
	deadline := time.After(30 * time.Second)
wait:
	for {
		select {
		case l, ok := <-lines:
			require.True(t, ok, "stderr closed before mux ran: %q", got)
			got = append(got, l)
			if strings.HasPrefix(l, "redmux-bench: mux ") {
				break wait
			}
		case <-deadline:
			t.Fatalf("no mux progress line within 30s: %q", got)
		}
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	for l := range lines {
		got = append(got, l)
	}
	err = cmd.Wait()
	killed = true
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "exit: %v; stderr %q", err, got)
	require.Equal(t, ExitInterrupted, ee.ExitCode(), "stderr %q", got)
	last := got[len(got)-1]
	require.Contains(t, last, "interrupted: the report covers what was measured (seq, mux partly)")
	require.Contains(t, last, filepath.Join(dir, FileReport))

	b, err := os.ReadFile(filepath.Join(dir, FileSummary))
	require.NoError(t, err)
	var rep Report
	require.NoError(t, json.Unmarshal(b, &rep))
	require.True(t, rep.Interrupted)
	require.Len(t, rep.Strategies, 2)
	seq, mux := rep.Strategies[0], rep.Strategies[1]
	require.False(t, seq.Interrupted)
	require.InDelta(t, 2.0, seq.DurationS, 0.5)
	require.Positive(t, seq.Acquired)
	require.True(t, mux.Interrupted)
	require.Positive(t, mux.Acquired)
	require.Less(t, mux.DurationS, 1.9)
	require.Zero(t, mux.Failed, "operations in flight at the stop finish; none is counted as failed: %v", mux.Errors)
	md, err := os.ReadFile(filepath.Join(dir, FileReport))
	require.NoError(t, err)
	require.Contains(t, string(md), "interrupted")
	require.Contains(t, string(md), "mux (interrupted)")
}
