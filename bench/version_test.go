package bench

import (
	"bytes"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/redmux/redmux/bench/internal/report"
)

func TestBuildOf(t *testing.T) {
	settings := func(kv ...string) []debug.BuildSetting {
		var out []debug.BuildSetting
		for i := 0; i+1 < len(kv); i += 2 {
			out = append(out, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	const unknown = "revision unknown (" + report.RevisionUnknownWhy + ")"
	noGit := func() (gitRev, bool) { return gitRev{}, false }
	git := func() (gitRev, bool) {
		return gitRev{revision: "fedcba9876543210fedcba9876543210fedcba98", time: "2026-11-26T04:39:35Z", modified: true}, true
	}
	tests := []struct {
		name    string
		bi      *debug.BuildInfo
		git     func() (gitRev, bool)
		want    string
		source  string
		rev     string
		modifed bool
	}{
		{"no build info", nil, noGit, "redmux-bench (devel) " + unknown + " go1.x", report.RevisionUnknown, "", false},
		{"test binary, no git", &debug.BuildInfo{}, noGit, "redmux-bench (devel) " + unknown + " go1.x", report.RevisionUnknown, "", false},
		{"tagged", &debug.BuildInfo{Main: debug.Module{Version: "v0.3.0"}}, git, "redmux-bench v0.3.0 go1.x", report.RevisionFromModule, "", false},
		{"checkout", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"},
			Settings: settings("vcs.revision", "0123456789abcdef0123", "vcs.time", "2026-11-25T20:00:00Z", "vcs.modified", "false")}, git,
			"redmux-bench (devel) revision 0123456789ab (2026-11-25T20:00:00Z) go1.x", report.RevisionFromBuildInfo, "0123456789abcdef0123", false},
		{"dirty checkout", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261125200000-0123456789ab+dirty"},
			Settings: settings("vcs.revision", "0123456789abcdef0123", "vcs.modified", "true")}, git,
			"redmux-bench v0.0.0-20261125200000-0123456789ab+dirty revision 0123456789ab+dirty go1.x", report.RevisionFromBuildInfo, "0123456789abcdef0123", true},
		{"go run", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, git,
			"redmux-bench (devel) revision fedcba987654+dirty (2026-11-26T04:39:35Z; read from git at run time: go run) go1.x",
			report.RevisionFromGit, "fedcba9876543210fedcba9876543210fedcba98", true},
		{"go run, git fails", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, noGit,
			"redmux-bench (devel) " + unknown + " go1.x", report.RevisionUnknown, "", false},
	}
	for _, tc := range tests {
		b := buildOf(tc.bi, "go1.x", tc.git)
		if b.Version != tc.want || b.RevisionSource != tc.source || b.Revision != tc.rev || b.Modified != tc.modifed {
			t.Errorf("%s: got %+v, want %q from %q, revision %q, modified %v", tc.name, b, tc.want, tc.source, tc.rev, tc.modifed)
		}
		if b.Describe() == "" {
			t.Errorf("%s: no description", tc.name)
		}
	}
}

func TestBuiltByGoTool(t *testing.T) {
	for exe, want := range map[string]bool{
		"/tmp/go-build3542596054/b001/exe/redmux-bench": true, // go run
		"/tmp/go-build123/b001/bench.test":              true, // go test
		// go run's cached executable (Go 1.24+)
		"/root/.cache/go-build/89/897b7bcd3f60b21fcef735c672981f94f02197f61c21b8a527e415b2056d6bc5-d/redmux-bench": true,
		"/srv/cache/89/897b7bcd3f60b21fcef735c672981f94f02197f61c21b8a527e415b2056d6bc5-d/redmux-bench":            true, // GOCACHE elsewhere
		"/srv/cache/89/897b7bcd3f60b21fcef735c672981f94f02197f61c21b8a527e415b2056d6bc5/redmux-bench":              false,
		"/srv/cache/8/897b7bcd3f60b21fcef735c672981f94f02197f61c21b8a527e415b2056d6bc5-d/redmux-bench":             false,
		"/usr/local/bin/redmux-bench":      false,
		"/home/u/go-build/redmux-bench":    false,
		"/home/u/go-builder1/redmux-bench": false,
	} {
		if got := builtByGoTool(exe); got != want {
			t.Errorf("%s: %v, want %v", exe, got, want)
		}
	}
}

// headRevision is the checkout's HEAD as git tells it, or skips the test
// (no git, or sources outside a checkout).
func headRevision(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "--no-optional-locks", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("no git checkout here: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// Issue 36 item 4: a binary that go run (or go test, as here) just built
// carries no VCS stamp; -version names the checkout's revision, read with
// git at run time.
func TestVersionNamesRevisionUnderGoRun(t *testing.T) {
	head := headRevision(t)
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				t.Skip("this test binary is VCS-stamped")
			}
		}
	}
	b := currentBuild()
	if b.RevisionSource != report.RevisionFromGit || (b.Revision != head && !isAncestor(b.Revision, head)) {
		t.Fatalf("build %+v, want revision %s (or one before it: a commit landed since the build read it) from git", b, head)
	}
	var out, errb bytes.Buffer
	if code := Main([]string{"-version"}, &out, &errb, noEnv); code != ExitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), " revision "+b.Revision[:12]) || !strings.Contains(out.String(), "go run") {
		t.Errorf("-version: %q, want revision %s", out.String(), b.Revision[:12])
	}
}

// isAncestor reports whether commit a is an ancestor of b in this
// checkout's history: the build's revision is read once, and someone may
// commit while the tests run.
func isAncestor(a, b string) bool {
	return len(a) == 40 && exec.Command("git", "--no-optional-locks", "merge-base", "--is-ancestor", a, b).Run() == nil
}

// -version prints one line and exits 0, whatever else is on the command
// line, and runs nothing.
func TestMainVersion(t *testing.T) {
	for _, args := range [][]string{{"-version"}, {"--version"}, {"-version", "-c", "0"}, {"sweep", "-version"}} {
		var out, errb bytes.Buffer
		if code := Main(args, &out, &errb, noEnv); code != ExitOK {
			t.Fatalf("%v: exit %d (%q)", args, code, errb.String())
		}
		got := out.String()
		if !strings.HasPrefix(got, "redmux-bench ") || strings.Count(got, "\n") != 1 || !strings.Contains(got, runtime.Version()) {
			t.Errorf("%v: %q", args, got)
		}
		if errb.Len() != 0 {
			t.Errorf("%v: stderr %q", args, errb.String())
		}
	}
}
