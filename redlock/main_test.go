package redlock_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redmux/redmux/fakeserver"
)

// childEnv makes the test binary a fake-cluster process (see
// startExternalCluster).
const childEnv = "REDLOCK_TEST_FAKE_CLUSTER"

func TestMain(m *testing.M) {
	if v := os.Getenv(childEnv); v != "" {
		os.Exit(runChildCluster(v))
	}
	os.Exit(m.Run())
}

// runChildCluster starts n fake nodes, prints their addresses on one line
// and serves until stdin is closed (the parent exited or is done).
func runChildCluster(v string) int {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 64 {
		fmt.Fprintln(os.Stderr, "bad", childEnv, v)
		return 2
	}
	cl, err := fakeserver.StartCluster(n, fakeserver.Config{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(strings.Join(cl.Addrs(), " "))
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = cl.Close()
	return 0
}

// startExternalCluster runs an n-node fake cluster in a child process, so
// that allocation counts (testing.AllocsPerRun, b.ReportAllocs, which count
// the whole process) measure the client alone.
func startExternalCluster(tb testing.TB, n int) []string {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+strconv.Itoa(n))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	tb.Cleanup(func() {
		_ = stdin.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- s
	}()
	select {
	case s := <-line:
		addrs := strings.Fields(s)
		if len(addrs) != n {
			tb.Fatalf("fake cluster child printed %q", s)
		}
		return addrs
	case <-time.After(20 * time.Second):
		tb.Fatal("fake cluster child did not start")
	}
	return nil
}
