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

	"github.com/redmux/redmux/bench/internal/report"

	"github.com/stretchr/testify/require"
)

// Issue 12 item 4: SIGINT stops the run cleanly: the finished strategy's
// results and the interrupted one's measured part are written, marked
// interrupted, and the exit status is 130. (-timeout 2s: under load a 50ms
// stall fails a release, which is not what this tests; two full -race runs
// on 2 shared cores at load average 5-8 saw release_no_quorum:2 that way.)
func TestSIGINTKeepsFinishedResults(t *testing.T) { signalKeepsFinishedResults(t, syscall.SIGINT) }

// SIGHUP (the terminal closed under a run) stops it as cleanly, the
// report written (it killed the process outright: no report, and
// -real-local's temporary directories were left behind).
func TestSIGHUPKeepsFinishedResults(t *testing.T) { signalKeepsFinishedResults(t, syscall.SIGHUP) }

func signalKeepsFinishedResults(t *testing.T, sig syscall.Signal) {
	exe, err := os.Executable()
	require.NoError(t, err)
	dir := t.TempDir()
	cmd := exec.Command(exe, "-fake", "3", "-strategy", "seq,mux", "-c", "2", "-d", "2s", "-warmup", "0s", "-timeout", "2s",
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
	require.NoError(t, cmd.Process.Signal(sig))
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
	require.Contains(t, last, filepath.Join(dir, report.FileReport))

	b, err := os.ReadFile(filepath.Join(dir, report.FileSummary))
	require.NoError(t, err)
	var rep report.Report
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
	md, err := os.ReadFile(filepath.Join(dir, report.FileReport))
	require.NoError(t, err)
	require.Contains(t, string(md), "interrupted")
	require.Contains(t, string(md), "mux (interrupted)")
}

// Issue 25 item 3: Ctrl-C in a terminal signals the whole foreground
// process group. The embedded cluster's child runs in a group of its own,
// so it outlives the clean stop (no operation fails because the servers
// died under it), and the step cut short is marked interrupted, not held.
func TestSweepCtrlCInTheProcessGroup(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	dir := t.TempDir()
	cmd := exec.Command(exe, "sweep", "-fake", "3", "-strategy", "mux", "-rates", "50,100", "-step", "3s", "-warmup", "200ms",
		"-slo", "p99<5s", "-timeout", "2s", "-refine", "0", "-out", dir)
	cmd.Env = append(os.Environ(), envRunMain+"=1")
	// A group of its own, as a shell gives a foreground job; the signal
	// goes to the whole group, as the terminal sends it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	killed := false
	defer func() {
		if !killed {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
		}
	}()
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var got []string
	deadline := time.After(60 * time.Second)
wait:
	for {
		select {
		case l, ok := <-lines:
			require.True(t, ok, "stderr closed early: %q", got)
			got = append(got, l)
			// The 50 ops/s step has been judged: the 100 ops/s step runs
			// next (200ms warm-up, then 3s measured).
			if strings.Contains(l, "mux: target 50 ops/s") {
				break wait
			}
		case <-deadline:
			t.Fatalf("no step verdict within 60s: %q", got)
		}
	}
	time.Sleep(1500 * time.Millisecond)
	require.NoError(t, syscall.Kill(-cmd.Process.Pid, syscall.SIGINT))
	for l := range lines {
		got = append(got, l)
	}
	err = cmd.Wait()
	killed = true
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "exit: %v; stderr %q", err, got)
	require.Equal(t, ExitInterrupted, ee.ExitCode(), "stderr %q", got)

	b, err := os.ReadFile(filepath.Join(dir, report.FileSweepJSON))
	require.NoError(t, err)
	var rep report.SweepReport
	require.NoError(t, json.Unmarshal(b, &rep))
	require.True(t, rep.Interrupted)
	ss := rep.Strategies[0]
	last := ss.Steps[len(ss.Steps)-1]
	require.Equal(t, 100.0, last.TargetRate, "%+v", steps(ss))
	require.True(t, last.Interrupted, "%+v", last)
	require.False(t, last.Held, "an interrupted step is not held")
	require.Contains(t, last.Why, "interrupted")
	for _, st := range ss.Steps {
		require.Zero(t, st.Failed, "the cluster must survive Ctrl-C: %+v (%v)", st.Errors, got)
	}
	require.Equal(t, 50.0, ss.KneeRate, "the interrupted step takes no part in the knee")
	md, err := os.ReadFile(filepath.Join(dir, report.FileSweepReport))
	require.NoError(t, err)
	require.Contains(t, string(md), "interrupted after")
}
