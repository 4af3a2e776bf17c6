package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestEditsApply: every mutant's text to replace is in its file exactly
// once, so `make mutants` can plant every bug. A change to the code a
// mutant patches fails here, in `make test`, instead of stopping the
// mutant run later (as an observer change once did to
// keepalive-ignores-holder-extend).
func TestEditsApply(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, m := range mutants {
		if names[m.Name] {
			t.Errorf("mutant %s listed twice", m.Name)
		}
		names[m.Name] = true
		if len(m.Edits) == 0 {
			t.Errorf("mutant %s plants nothing", m.Name)
		}
		for _, e := range m.Edits {
			b, err := os.ReadFile(filepath.Join(root, e.File))
			if err != nil {
				t.Errorf("mutant %s: %v", m.Name, err)
				continue
			}
			if n := bytes.Count(b, []byte(e.Old)); n != 1 {
				t.Errorf("mutant %s: the text to replace is in %s %d times, want once: %q", m.Name, e.File, n, e.Old)
			}
			if e.Old == e.New {
				t.Errorf("mutant %s: an edit of %s changes nothing", m.Name, e.File)
			}
		}
	}
}

// anchorLine is the 0-based line of src where the edit old lands: the
// line its text starts on or, for a text inside a raw string (a script's
// Lua), the line that opens the string, where a Go comment can sit.
func anchorLine(src, old string) int {
	off := strings.Index(src, old)
	if strings.Count(src[:off], "`")%2 == 1 {
		off = strings.LastIndex(src[:off], "`")
	}
	return strings.Count(src[:off], "\n")
}

// markerNames returns the mutant names of a "//mutant:a,b" line, or nil.
func markerNames(line string) []string {
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), "//mutant:")
	if !ok {
		return nil
	}
	return strings.Split(rest, ",")
}

// TestMarkersOnPatchedLines: every line a mutant patches carries a
// "//mutant:NAME" line right above it (issue 49: a tie by text must be
// visible where it lands, as Go's test/ puts its ERROR marker on the line
// it tests), and every such marker names a mutant whose edit lands right
// below it, so none outlives its mutant. A directive-style comment: go doc
// leaves it out of the documentation.
func TestMarkersOnPatchedLines(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[int][]string{} // file -> marker line -> names
	for _, m := range mutants {
		for _, e := range m.Edits {
			b, err := os.ReadFile(filepath.Join(root, e.File))
			if err != nil || bytes.Count(b, []byte(e.Old)) != 1 {
				continue // TestEditsApply reports it
			}
			src := string(b)
			at := anchorLine(src, e.Old)
			lines := strings.Split(src, "\n")
			if at == 0 || !slices.Contains(markerNames(lines[at-1]), m.Name) {
				t.Errorf("mutant %s: %s:%d has no //mutant:%s line above it", m.Name, e.File, at+1, m.Name)
			}
			if want[e.File] == nil {
				want[e.File] = map[int][]string{}
			}
			if !slices.Contains(want[e.File][at-1], m.Name) {
				want[e.File][at-1] = append(want[e.File][at-1], m.Name)
			}
		}
	}
	files, err := listFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !strings.HasSuffix(f, ".go") || strings.HasPrefix(f, "redlock/internal/mutants/") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil || !bytes.Contains(b, []byte("//mutant:")) {
			continue
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, name := range markerNames(line) {
				if !slices.Contains(want[f][i], name) {
					t.Errorf("%s:%d: //mutant:%s, but no edit of that mutant lands on the next line: delete or move the marker", f, i+1, name)
				}
			}
		}
	}
}

// TestHangReport: a run that timed out is reported by its goroutines in
// redmux code, grouped and counted, largest group first; a run that did
// not time out reports nothing.
func TestHangReport(t *testing.T) {
	dump := "=== RUN   TestAvailabilityNoLeftovers\npanic: test timed out after 7m0s\n\trunning tests:\n\t\tTestAvailabilityNoLeftovers (7m0s)\n\n" +
		"goroutine 10 [running]:\ntesting.(*M).startAlarm.func1()\n\t/usr/local/go/src/testing/testing.go:2802 +0x354\ncreated by time.goFunc\n\t/usr/local/go/src/time/sleep.go:215 +0x2d\n\n"
	holder := "goroutine %d [runnable]:\nruntime.Gosched()\n\t/usr/local/go/src/runtime/proc.go:1 +0x1\n" +
		"github.com/redmux/redmux/mux.(*tokenDriver).waitTurns(0x1)\n\t/x/mux/driver_token_enter_linux.go:160 +0x1\n" +
		"github.com/redmux/redmux/mux.(*Client).Do(0x1, {0x2, 0x3})\n\t/x/mux/client.go:185 +0x1\n" +
		"created by github.com/redmux/redmux/redlock.runHolders in goroutine 7\n\t/x/redlock/safety_test.go:1 +0x1\n\n"
	for i := 0; i < 3; i++ {
		dump += strings.ReplaceAll(holder, "%d", string(rune('a'+i)))
	}
	dump += "goroutine 20 [select, 6 minutes]:\ngithub.com/redmux/redmux/mux.(*tokenDriver).poll(0x1)\n\t/x/mux/driver_token_linux.go:300 +0x1\n\n"
	r := hangReport("demo", dump)
	for _, want := range []string{"3 x [runnable] mux.(*tokenDriver).waitTurns < mux.(*Client).Do", "1 x [select] mux.(*tokenDriver).poll", "whole output: "} {
		if !strings.Contains(r, want) {
			t.Errorf("report lacks %q:\n%s", want, r)
		}
	}
	if strings.Index(r, "3 x") > strings.Index(r, "1 x") || strings.Contains(r, "runHolders") || strings.Contains(r, "startAlarm") {
		t.Errorf("groups out of order, or frames not in redmux code counted:\n%s", r)
	}
	if f := r[strings.Index(r, "whole output: ")+len("whole output: "):]; f != "" {
		os.Remove(f[:strings.Index(f, ")")])
	}
	if hangReport("demo", "--- FAIL: TestX\nFAIL\n") != "" {
		t.Error("a run that did not time out reported a hang")
	}
}
