package archtest

import (
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// maxMuxFileLines is the longest a Go file of package mux (mux/*.go, test
// files included) may be: one concern per file, the engine's files apart
// from each other and from the kernel layer.
const maxMuxFileLines = 450

// kernelSyscalls, like the unsafe import, only mux's kernel layer
// (mux/internal/poll) may name: io_uring's raw system call numbers. Package
// mux builds entries with poll's typed builders and never casts a pointer.
const kernelSyscalls = "SYS_IO_URING"

// checkMuxFiles returns the violations among mux's files (path -> source):
// a file over max lines, a file that imports "unsafe", a file that names
// an io_uring system call number.
func checkMuxFiles(files map[string]string, max int) []string {
	var bad []string
	add := func(format string, a ...any) { bad = append(bad, fmt.Sprintf(format, a...)) }
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		src := files[name]
		if n := strings.Count(src, "\n"); n > max {
			add("%s is %d lines, over %d: split it by concern (whole functions, names unchanged)", name, n, max)
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.ImportsOnly)
		if err != nil {
			add("%s: %v", name, err)
			continue
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == "unsafe" {
				add("%s imports unsafe: that belongs in mux/internal/poll, behind a typed builder", name)
			}
		}
		if strings.Contains(src, kernelSyscalls) {
			add("%s names %s: io_uring's system calls belong in mux/internal/poll", name, kernelSyscalls)
		}
	}
	return bad
}

// TestMuxFiles: package mux's files stay under maxMuxFileLines lines,
// import no unsafe and make no io_uring system call themselves (issue 37).
func TestMuxFiles(t *testing.T) {
	dir := filepath.Join(moduleRoot(t), "mux")
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) < 50 {
		t.Fatalf("found only %d files in %s", len(paths), dir)
	}
	files := map[string]string{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files["mux/"+filepath.Base(p)] = string(b)
	}
	report(t, "mux's files", checkMuxFiles(files, maxMuxFileLines))
}

// The mux file check passes clean files and reports each planted breach:
// a file one line over the limit (a test file too), an unsafe import
// (alone or in a group), an io_uring system call number.
func TestMuxFilesCatchDrift(t *testing.T) {
	lines := func(n int) string { // a file of n lines
		return "package mux\n" + strings.Repeat("\n", n-1)
	}
	clean := map[string]string{
		"mux/a.go":      lines(450),
		"mux/a_test.go": lines(450),
		"mux/b.go":      "package mux\n\nimport (\n\t\"os\"\n\n\t\"golang.org/x/sys/unix\"\n)\n\nvar _, _ = os.Getpid, unix.Getpid\n",
	}
	if bad := checkMuxFiles(clean, 450); len(bad) != 0 {
		t.Fatalf("clean files reported: %q", bad)
	}
	cases := []struct{ name, file, src, want string }{
		{"a file over the limit", "mux/a.go", lines(451), "mux/a.go is 451 lines, over 450"},
		{"a test file over the limit", "mux/a_test.go", lines(451), "mux/a_test.go is 451 lines, over 450"},
		{"unsafe imported", "mux/c.go", "package mux\n\nimport \"unsafe\"\n\nvar _ = unsafe.Sizeof(0)\n", "mux/c.go imports unsafe"},
		{"unsafe in a group", "mux/c_linux.go", "package mux\n\nimport (\n\t\"os\"\n\t\"unsafe\"\n)\n", "mux/c_linux.go imports unsafe"},
		{"an io_uring system call", "mux/c_linux.go", "package mux\n\nimport \"golang.org/x/sys/unix\"\n\nvar _ = unix.SYS_IO_URING_ENTER\n",
			"mux/c_linux.go names SYS_IO_URING"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{}
			for k, v := range clean {
				files[k] = v
			}
			files[tc.file] = tc.src
			bad := checkMuxFiles(files, 450)
			if len(bad) != 1 || !strings.Contains(bad[0], tc.want) {
				t.Fatalf("violations %q, want one containing %q", bad, tc.want)
			}
		})
	}
}

// topologyFree are mux's engine files: they ask a node's topology value
// (mux/topology.go) and never look at what kind of node it is (issue 49).
var topologyFree = []string{"client.go", "ingest.go", "batch.go", "setup.go", "supervisor.go", "dial_linux.go", "driver_net.go"}

// TestEngineNamesNoTopology: no engine file names a node's cluster or
// sentinel state; those live in cluster*.go and sentinel*.go behind the
// topology seam.
func TestEngineNamesNoTopology(t *testing.T) {
	kind := regexp.MustCompile(`\.(cluster|sentinel)\b`)
	root := moduleRoot(t)
	for _, f := range topologyFree {
		b, err := os.ReadFile(filepath.Join(root, "mux", f))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if kind.MatchString(line) {
				t.Errorf("mux/%s:%d names a node kind (ask node.topo instead): %s", f, i+1, strings.TrimSpace(line))
			}
		}
	}
}
