package archtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// README.md's two tables that mirror other files, checked against them:
//
//   - "## Make targets": one row per target the Makefile documents with a
//     "## name: ..." comment, no row for a target it does not, and the same
//     stated durations ("~30 s", "~2 min") in the row as in the comment.
//     A "make name  # ..." line in an indented block elsewhere in the README
//     (Quick start) that states a duration states the Makefile's.
//   - "## Package map": every package `go list ./...` finds has a row (a
//     row may name several paths), and every path a row names is a package
//     or a directory that holds none of the module's (results/, docs/,
//     interop/, a nested module): no row names a package that is gone.

const (
	makeHeader = "| target | what |"
	mapHeader  = "| path | what |"
)

// makeDoc is one target's "## name: ..." comment in the Makefile.
type makeDoc struct {
	name, text string
	line       int
}

var (
	makeDocStart = regexp.MustCompile(`^## ([a-z][a-z0-9-]*): `)
	makeRule     = regexp.MustCompile(`^([a-z][a-z0-9-]*):`)
	// duration is a stated duration: "~30 s", "~2.5 min", "~1h".
	duration = regexp.MustCompile(`~\s?(\d+(?:\.\d+)?)\s?(s|min|h)\b`)
	// readmeMake is an indented "make name   # comment" line.
	readmeMake = regexp.MustCompile(`^\s{4,}make ([a-z][a-z0-9-]*)\b[^#]*#(.*)$`)
)

// durations returns the durations text states, normalised ("30 s").
func durations(text string) []string {
	var out []string
	for _, m := range duration.FindAllStringSubmatch(text, -1) {
		out = append(out, m[1]+" "+m[2])
	}
	return out
}

// makeDocs parses the Makefile's "## name: ..." comments; a comment's
// further "## " lines continue it, and the rule right below it must be
// name's.
func makeDocs(makefile string) ([]makeDoc, []string) {
	var docs []makeDoc
	var bad []string
	var cur *makeDoc
	for i, l := range strings.Split(makefile, "\n") {
		if m := makeDocStart.FindStringSubmatch(l); m != nil {
			docs = append(docs, makeDoc{name: m[1], text: l[len(m[0]):], line: i + 1})
			cur = &docs[len(docs)-1]
			continue
		}
		if cur != nil && strings.HasPrefix(l, "## ") {
			cur.text += " " + strings.TrimPrefix(l, "## ")
			continue
		}
		if cur != nil {
			if m := makeRule.FindStringSubmatch(l); m == nil || m[1] != cur.name {
				bad = append(bad, fmt.Sprintf("Makefile:%d: ## %s: is not followed by the %s rule", cur.line, cur.name, cur.name))
			}
		}
		cur = nil
	}
	return docs, bad
}

// checkMakeTargets compares README's Make-targets table (and its other
// "make name  # ..." lines) with the Makefile's ## comments.
func checkMakeTargets(readme, makefile string) []string {
	docs, bad := makeDocs(makefile)
	add := func(format string, a ...any) { bad = append(bad, fmt.Sprintf(format, a...)) }
	rows, err := docTable(readme, makeHeader)
	if err != nil {
		return append(bad, "README.md Make targets: "+err.Error())
	}
	byName := map[string]makeDoc{}
	for _, d := range docs {
		if _, dup := byName[d.name]; dup {
			add("Makefile: two ## %s: comments", d.name)
		}
		byName[d.name] = d
	}
	seen := map[string]bool{}
	for _, c := range rows {
		m := codeSpan.FindStringSubmatch(c[0])
		name, ok := "", false
		if m != nil && m[0] == c[0] {
			name, ok = strings.CutPrefix(m[1], "make ")
		}
		if !ok || strings.ContainsAny(name, " \t") {
			add("README.md Make targets: cell %q: want one `make name`", c[0])
			continue
		}
		if seen[name] {
			add("README.md Make targets: make %s has two rows", name)
		}
		seen[name] = true
		d, ok := byName[name]
		if !ok {
			add("README.md Make targets: make %s has no ## %s: comment in the Makefile (a target that is gone, or one to document there)", name, name)
			continue
		}
		if got, want := durations(c[1]), durations(d.text); !slices.Equal(got, want) {
			add("README.md Make targets: make %s states durations %v, the Makefile's ## comment (line %d) %v", name, got, d.line, want)
		}
	}
	for _, d := range docs {
		if !seen[d.name] {
			add("README.md Make targets: no row for make %s (Makefile:%d)", d.name, d.line)
		}
	}
	for i, l := range strings.Split(readme, "\n") {
		m := readmeMake.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		got := durations(m[2])
		if len(got) == 0 {
			continue
		}
		d, ok := byName[m[1]]
		if !ok {
			add("README.md:%d: make %s has no ## comment in the Makefile", i+1, m[1])
		} else if want := durations(d.text); !slices.Equal(got, want) {
			add("README.md:%d: make %s states durations %v, the Makefile's ## comment (line %d) %v", i+1, m[1], got, d.line, want)
		}
	}
	return bad
}

// checkPackageMap compares README's Package map with the module's
// packages (paths relative to the module root, "." for the root); isDir
// says whether a path is a directory of the repository.
func checkPackageMap(readme string, pkgs []string, isDir func(string) bool) []string {
	var bad []string
	add := func(format string, a ...any) { bad = append(bad, fmt.Sprintf(format, a...)) }
	rows, err := docTable(readme, mapHeader)
	if err != nil {
		return []string{"README.md Package map: " + err.Error()}
	}
	named := map[string]bool{}
	for _, c := range rows {
		spans := codeSpan.FindAllStringSubmatch(c[0], -1)
		if len(spans) == 0 {
			add("README.md Package map: cell %q: want `path/`, ...", c[0])
			continue
		}
		for _, s := range spans {
			p := strings.TrimSuffix(s[1], "/")
			if named[p] {
				add("README.md Package map: %s/ has two rows", p)
			}
			named[p] = true
			if slices.Contains(pkgs, p) {
				continue
			}
			if !isDir(p) {
				add("README.md Package map names %s/, which does not exist", p)
				continue
			}
			for _, q := range pkgs {
				if strings.HasPrefix(q, p+"/") {
					add("README.md Package map names %s/, which is no package (%s is one below it)", p, q)
					break
				}
			}
		}
	}
	for _, p := range pkgs {
		if !named[p] {
			add("README.md Package map has no row for package %s/", p)
		}
	}
	return bad
}

// modulePackages lists the module's packages, relative to its root.
func modulePackages(t *testing.T, root string) []string {
	t.Helper()
	cmd := exec.Command(goTool(t), "list", "-f", "{{.ImportPath}}", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	var pkgs []string
	for _, l := range strings.Fields(string(out)) {
		r, ok := rel(l)
		if !ok {
			t.Fatalf("go list ./... lists %s, outside the module", l)
		}
		pkgs = append(pkgs, r)
	}
	return pkgs
}

// TestReadmeTables checks README's Make targets and Package map against
// the Makefile and go list.
func TestReadmeTables(t *testing.T) {
	root := moduleRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	report(t, "README.md against the Makefile", checkMakeTargets(string(readme), string(makefile)))
	isDir := func(p string) bool {
		fi, err := os.Stat(filepath.Join(root, p))
		return err == nil && fi.IsDir()
	}
	report(t, "README.md against go list", checkPackageMap(string(readme), modulePackages(t, root), isDir))
}

const fixtureMakefile = `GO ?= go

## run: the benchmark (~30 s)
run:
	$(GO) run ./cmd/redmux-bench

## test: every test
## with the race detector (~2 min)
test: vet
	$(GO) test -race ./...

vet:
	$(GO) vet ./...

## mutants-short: the cheap mutants only
mutants-short:
	$(GO) run ./redlock/internal/mutants -short -control 30s -max 60s
`

const fixtureReadme = "## Quick start\n\n" +
	"    make run     # the benchmark (~30 s), report under results/latest/\n" +
	"    make test    # every test\n\n" +
	"## Package map\n\n" + mapHeader + `
| --- | --- |
| ` + "`resp/`" + ` | codec |
| ` + "`mux/`" + ` | client |
| ` + "`redlock/internal/hook/`, `redlock/internal/mutants/`" + ` | hooks |
| ` + "`results/`" + ` | reports |

## Make targets

` + makeHeader + `
| --- | --- |
| ` + "`make run`" + ` | the benchmark (~30 s) |
| ` + "`make test`" + ` | every test with ` + "`-race`" + ` (~2 min) |
| ` + "`make mutants-short`" + ` | the cheap mutants (CI) |
`

var fixturePkgs = []string{"resp", "mux", "redlock/internal/hook", "redlock/internal/mutants"}

func fixtureIsDir(p string) bool {
	return p == "results" || p == "redlock" || slices.Contains(fixturePkgs, p)
}

// The README checks pass the fixture and report each planted untruth: a
// stale duration on either side, a target without a row or a row without
// a target, a package without a row, a row for a package that is gone.
func TestReadmeChecksCatchDrift(t *testing.T) {
	if bad := checkMakeTargets(fixtureReadme, fixtureMakefile); len(bad) != 0 {
		t.Fatalf("fixture Make targets are untrue: %v", bad)
	}
	if bad := checkPackageMap(fixtureReadme, fixturePkgs, fixtureIsDir); len(bad) != 0 {
		t.Fatalf("fixture Package map is untrue: %v", bad)
	}
	makeCases := []struct{ name, file, old, new, want string }{
		{"stale ## time", "Makefile", "with the race detector (~2 min)", "with the race detector (~3 min)",
			"make test states durations [2 min], the Makefile's ## comment (line 7) [3 min]"},
		{"## time the row lacks", "Makefile", "the cheap mutants only", "the cheap mutants only (~2.5 min)",
			"make mutants-short states durations [], the Makefile's ## comment (line 15) [2.5 min]"},
		{"stale row time", "README", "| the benchmark (~30 s) |", "| the benchmark (~20 s) |",
			"make run states durations [20 s], the Makefile's ## comment (line 3) [30 s]"},
		{"stale quick start time", "README", "# the benchmark (~30 s), report", "# the benchmark (~20 s), report",
			"README.md:3: make run states durations [20 s]"},
		{"target without a row", "README", "| `make mutants-short` | the cheap mutants (CI) |\n", "",
			"no row for make mutants-short (Makefile:15)"},
		{"row without a target", "Makefile", "## mutants-short: the cheap mutants only\n", "",
			"make mutants-short has no ## mutants-short: comment in the Makefile"},
		{"comment above another rule", "Makefile", "\nvet:", "\n## vet: go vet\nmutants:",
			"## vet: is not followed by the vet rule"},
	}
	for _, tc := range makeCases {
		t.Run(tc.name, func(t *testing.T) {
			readme, makefile := fixtureReadme, fixtureMakefile
			p := &readme
			if tc.file == "Makefile" {
				p = &makefile
			}
			planted := strings.Replace(*p, tc.old, tc.new, 1)
			if planted == *p {
				t.Fatalf("the plant %q was not found", tc.old)
			}
			*p = planted
			bad := checkMakeTargets(readme, makefile)
			if len(bad) == 0 || !strings.Contains(strings.Join(bad, "\n"), tc.want) {
				t.Fatalf("violations %q, want one containing %q", bad, tc.want)
			}
		})
	}
	mapCases := []struct {
		name, old, new string
		pkgs           []string
		want           string
	}{
		{"removed row", "| `mux/` | client |\n", "", nil, "no row for package mux/"},
		{"removed path of a shared row", "`redlock/internal/hook/`, `redlock/internal/mutants/`", "`redlock/internal/hook/`", nil,
			"no row for package redlock/internal/mutants/"},
		{"new package", "", "", append(slices.Clone(fixturePkgs), "bench/load"), "no row for package bench/load/"},
		{"row for a package that is gone", "| `resp/` | codec |", "| `resp/` | codec |\n| `internal/gone/` | gone |", nil,
			"names internal/gone/, which does not exist"},
		{"row for a parent directory", "| `resp/` | codec |", "| `resp/` | codec |\n| `redlock/` | lock |", nil,
			"names redlock/, which is no package"},
	}
	for _, tc := range mapCases {
		t.Run(tc.name, func(t *testing.T) {
			readme := strings.Replace(fixtureReadme, tc.old, tc.new, 1)
			if tc.old != "" && readme == fixtureReadme {
				t.Fatalf("the plant %q was not found", tc.old)
			}
			pkgs := fixturePkgs
			if tc.pkgs != nil {
				pkgs = tc.pkgs
			}
			bad := checkPackageMap(readme, pkgs, fixtureIsDir)
			if len(bad) != 1 || !strings.Contains(bad[0], tc.want) {
				t.Fatalf("violations %q, want one containing %q", bad, tc.want)
			}
		})
	}
}

// TestReadmeMutantCounts: README's Make targets give the number of planted
// bugs (make mutants) and of the cheap ones (make mutants-short); they
// are the mutation list's.
func TestReadmeMutantCounts(t *testing.T) {
	root := moduleRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	list, err := os.ReadFile(filepath.Join(root, "redlock/internal/mutants/list.go"))
	if err != nil {
		t.Fatal(err)
	}
	if bad := checkMutantCounts(string(readme), string(list)); len(bad) > 0 {
		t.Fatal(strings.Join(bad, "\n"))
	}
	if bad := checkMutantCounts(strings.Replace(string(readme), "every planted bug (", "every planted bug (1", 1), string(list)); len(bad) != 1 {
		t.Fatalf("a stale count was not caught: %v", bad)
	}
}

var (
	mutantsAll   = regexp.MustCompile(`every planted bug \((\d+)\)`)
	mutantsShort = regexp.MustCompile(`the (\d+) cheap-to-catch mutants`)
	mutantName   = regexp.MustCompile(`(?m)^\t\tName: "`)
	mutantShort  = regexp.MustCompile(`Short: true`)
)

// checkMutantCounts compares README's counts of mutants with list.go's.
func checkMutantCounts(readme, list string) []string {
	var bad []string
	for _, c := range []struct {
		re   *regexp.Regexp
		want int
		what string
	}{{mutantsAll, len(mutantName.FindAllString(list, -1)), "planted bugs"}, {mutantsShort, len(mutantShort.FindAllString(list, -1)), "short mutants"}} {
		m := c.re.FindStringSubmatch(readme)
		if m == nil {
			bad = append(bad, "README.md gives no count of "+c.what)
			continue
		}
		if m[1] != strconv.Itoa(c.want) {
			bad = append(bad, fmt.Sprintf("README.md says %s %s, redlock/internal/mutants/list.go has %d", m[1], c.what, c.want))
		}
	}
	return bad
}

// Issue 48 item 6: `go run` turns every non-zero exit status into 1, so a
// README command whose exit status matters (one that uses -fail-on-breach
// or reads $?) runs a built binary, and the README shows how to build it
// and says what go run does to the statuses.
func TestReadmeExitStatusesFromABuiltBinary(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(moduleRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	if !strings.Contains(readme, "\n    go build -o bin/redmux-bench ./cmd/redmux-bench\n") {
		t.Error("README.md has no indented `go build -o bin/redmux-bench ./cmd/redmux-bench` line")
	}
	if !strings.Contains(readme, "`go run` reports every failure as\nexit status 1") {
		t.Error("README.md does not say that go run reports every failure as exit status 1")
	}
	lines := strings.Split(readme, "\n")
	n := 0
	for i, l := range lines {
		if !strings.HasPrefix(l, "    ") || !(strings.Contains(l, "-fail-on-breach") || strings.Contains(l, "$?")) {
			continue
		}
		n++
		// A command continued from the line above (a trailing \) starts there.
		cmd := l
		for j := i - 1; j >= 0 && strings.HasSuffix(lines[j], "\\"); j-- {
			cmd = lines[j] + cmd
		}
		if strings.Contains(cmd, "go run") || !strings.Contains(cmd, "bin/redmux-bench") {
			t.Errorf("README.md:%d: a command whose exit status matters runs `go run` (which exits 1 for every failure), not bin/redmux-bench: %s", i+1, strings.TrimSpace(cmd))
		}
	}
	if n < 2 {
		t.Errorf("README.md shows %d commands with their exit status, want the usage error's (2) and the breach's (3)", n)
	}
}
