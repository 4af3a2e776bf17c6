package bench

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redmux/redmux/bench/internal/report"
)

// versionString is what -version prints: "redmux-bench <module version>" (a
// tag such as v0.3.0, a pseudo-version for a go build in a checkout, or
// "(devel)"), the VCS revision, "+dirty" when the working tree had
// changes and the revision's commit time, where the revision came from
// when not from the binary's stamp, and the Go version and platform. When
// nothing names the revision, it says "revision unknown" and why.
//
// go run never stamps a binary with its revision (and .ci/run and some
// environments set GOFLAGS=-buildvcs=false, which stops go build from
// stamping too): a binary that go run has just built in its temporary
// directory asks git in its own source checkout (HEAD, and whether
// git status shows changes, as go build's stamp would), once, with a
// short timeout and without taking git's optional locks. Any other binary
// without a stamp says "revision unknown" instead of guessing from the
// current directory's checkout, which may have moved on since the build.
func versionString() string { return currentBuild().Version }

var (
	buildOnce sync.Once
	buildMemo report.Build
)

// currentBuild returns this binary's Build, worked out once.
func currentBuild() report.Build {
	buildOnce.Do(func() {
		bi, ok := debug.ReadBuildInfo()
		if !ok {
			bi = nil
		}
		buildMemo = buildOf(bi, runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH, gitRevision)
	})
	return buildMemo
}

// gitRev is what git says of a checkout.
type gitRev struct {
	revision, time string
	modified       bool
}

// buildOf works out the Build from the build info bi (nil: none), the Go
// version and platform text, and fromGit (asked only for a development
// build without a stamp; ok false when it cannot tell).
func buildOf(bi *debug.BuildInfo, goVersion string, fromGit func() (gitRev, bool)) report.Build {
	b := report.Build{Module: "(devel)", RevisionSource: report.RevisionUnknown}
	if bi != nil {
		if bi.Main.Version != "" {
			b.Module = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Revision = s.Value
			case "vcs.modified":
				b.Modified = s.Value == "true"
			case "vcs.time":
				b.RevisionTime = s.Value
			}
		}
	}
	switch {
	case b.Revision != "":
		b.RevisionSource = report.RevisionFromBuildInfo
	case b.Module != "(devel)":
		b.RevisionSource = report.RevisionFromModule
	case fromGit != nil:
		if g, ok := fromGit(); ok {
			b.Revision, b.RevisionTime, b.Modified = g.revision, g.time, g.modified
			b.RevisionSource = report.RevisionFromGit
		}
	}
	out := "redmux-bench " + b.Module
	switch b.RevisionSource {
	case report.RevisionFromBuildInfo, report.RevisionFromGit:
		out += " revision " + b.ShortRevision()
		var notes []string
		if b.RevisionTime != "" {
			notes = append(notes, b.RevisionTime)
		}
		if b.RevisionSource == report.RevisionFromGit {
			notes = append(notes, "read from git at run time: go run")
		}
		if len(notes) > 0 {
			out += " (" + strings.Join(notes, "; ") + ")"
		}
	case report.RevisionUnknown:
		out += " revision unknown (" + report.RevisionUnknownWhy + ")"
	}
	b.Version = out + " " + goVersion
	return b
}

// gitRevision reads the revision of the checkout this binary's sources are
// in, when go run (or go test) built the binary moments ago: HEAD, its
// commit time, and whether git status shows changes (untracked files
// included, as go build's vcs.modified). ok is false for any other binary,
// for sources without an absolute path (-trimpath), and when git is
// missing, slow (2 s) or fails.
func gitRevision() (gitRev, bool) {
	exe, err := os.Executable()
	if err != nil || !builtByGoTool(exe) {
		return gitRev{}, false
	}
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return gitRev{}, false
	}
	dir := filepath.Dir(file)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return gitRev{}, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	out, err := runGit(ctx, dir, "-c", "log.showsignature=false", "log", "-1", "--format=%H %ct")
	if err != nil {
		return gitRev{}, false
	}
	hash, ct, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	if len(hash) < 40 || !isHex(hash) {
		return gitRev{}, false
	}
	g := gitRev{revision: hash}
	if sec, err := strconv.ParseInt(ct, 10, 64); err == nil {
		g.time = time.Unix(sec, 0).UTC().Format(time.RFC3339)
	}
	st, err := runGit(ctx, dir, "-c", "core.fsmonitor=false", "status", "--porcelain")
	if err != nil {
		return gitRev{}, false
	}
	g.modified = len(bytes.TrimSpace(st)) > 0
	return g, true
}

// builtByGoTool reports whether exe is a binary that go run or go test
// built for the run: in a go command's temporary build directory
// (go-build<N>/b001/exe/...), or in the build cache, where go run keeps
// the executables it builds since Go 1.24 ($GOCACHE/<xx>/<64 hex>-d/...).
// Either way the go command checked it against the sources in the
// checkout just before it started.
func builtByGoTool(exe string) bool {
	els := strings.Split(filepath.ToSlash(exe), "/")
	for i, el := range els {
		if n := strings.TrimPrefix(el, "go-build"); n != el && n != "" && strings.Trim(n, "0123456789") == "" {
			return true
		}
		if i > 0 && len(els[i-1]) == 2 && isHex(els[i-1]) && len(el) == 64+2 && strings.HasSuffix(el, "-d") && isHex(el[:64]) {
			return true
		}
	}
	return false
}

func isHex(s string) bool { return strings.Trim(s, "0123456789abcdef") == "" }

// runGit runs git in dir without its optional locks (git status would
// otherwise refresh the index under index.lock, racing a commit in the
// same checkout) and without a repository chosen by the environment.
func runGit(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"--no-optional-locks", "-C", dir}, args...)...)
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OPTIONAL_LOCKS":
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	cmd.Env = append(cmd.Env, "GIT_OPTIONAL_LOCKS=0", "GIT_TERMINAL_PROMPT=0")
	return cmd.Output()
}
