// Package archtest checks the module's architecture against its rules and
// against docs/ARCHITECTURE.md: the import flow, the packages that must stay
// free of client code or of the standard library's testing package, the
// per-package import table, go.mod's direct requirements, the drawing's
// arrows (each a direct import) and the repository paths the document names
// (each exists; drawing_test.go). It has only test files; it is built by
// `go test` and linked into nothing.
//
// The facts come from `go list` for each build CI checks (linux, linux with
// -tags redmux_portable, darwin, windows), so a rule broken by one
// platform's files is caught too.
package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/redmux/redmux"

// The layers of the one-way import flow, cmd -> bench -> redlock -> mux ->
// resp. A package may import module packages of a lower level only, or
// packages beside the flow (side below). lockcmd and lockrule sit above mux (the client
// knows no lock command) and below redlock; the checker sits above redlock,
// beside bench; bench/load, bench's load generator, sits below bench and
// above redlock (it imports no module package); bench's internal packages
// (bench/internal/...) sit between bench/load and bench; mux/internal/poll,
// mux's kernel layer, sits below mux (it imports no module package), and
// so does internal/nodeaddr, the node-address parser mux shares with bench.
var level = map[string]int{
	"resp":                     0,
	"mux/internal/poll":        5,
	"internal/nodeaddr":        5,
	"mux":                      10,
	"internal/lockcmd":         15,
	"internal/lockrule":        15,
	"redlock":                  20,
	"bench/load":               25,
	"bench/internal/format":    26,
	"bench/internal/stats":     26,
	"bench/internal/hdrtest":   26,
	"bench/internal/hlog":      27,
	"bench/internal/plot":      27,
	"bench/internal/report":    28,
	"redlock/internal/checker": 30,
	"bench":                    30,
	"cmd/redmux-bench":         40,
	"cmd/fakeredis":            40,
}

// side are the packages beside the flow, each with the module packages it
// may import (any package in the flow may import them).
var side = map[string][]string{
	"redlock/scripts":              nil,
	"redlock/internal/hook":        nil,
	"redlock/internal/mutants":     nil,
	"internal/redisproc":           nil,
	"fakeserver":                   {"redlock/scripts"},
	"internal/redisproc/redistest": {"internal/redisproc"},
}

// stdOnly may import the standard library only.
var stdOnly = []string{"resp", "internal/nodeaddr", "internal/lockrule", "redlock/scripts", "redlock/internal/hook", "redlock/internal/mutants", "internal/redisproc", "bench/internal/format"}

// clientCode is what fakeserver must never reach, directly or not.
var clientCode = []string{"resp", "mux", "internal/nodeaddr", "internal/lockcmd", "internal/lockrule", "redlock", "bench"}

// cmdMay is all the module code a cmd/* main may import.
var cmdMay = []string{"bench", "fakeserver"}

// pkg is one module package, merged over the build configurations.
type pkg struct {
	Rel      string          // path inside the module ("resp", "cmd/fakeredis")
	Name     string          // package name
	Mod      map[string]bool // module packages imported (Rel form)
	Ext      map[string]bool // non-standard imports from outside the module
	ModDeps  map[string]bool // module packages reached, directly or not
	Testing  bool            // reaches package testing
	Carriers map[string]bool // direct imports through which testing is reached
}

// graph maps Rel to the package.
type graph map[string]*pkg

// goList is one `go list -json` record, the fields used here.
type goList struct {
	ImportPath string
	Name       string
	Standard   bool
	GoFiles    []string
	Imports    []string
	Deps       []string
	Module     *struct{ Path string }
	Error      *struct{ Err string }
}

var configs = []struct {
	name string
	env  []string
	tags string
}{
	{"linux", []string{"GOOS=linux", "GOARCH=amd64"}, ""},
	{"linux/redmux_portable", []string{"GOOS=linux", "GOARCH=amd64"}, "redmux_portable"},
	{"darwin", []string{"GOOS=darwin", "GOARCH=arm64"}, ""},
	{"windows", []string{"GOOS=windows", "GOARCH=amd64"}, ""},
}

func goTool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list packages: %v", err)
	}
	return p
}

// moduleRoot is the directory of go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command(goTool(t), "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		t.Fatal("not inside a module")
	}
	return filepath.Dir(gomod)
}

func run(t *testing.T, dir string, env []string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(goTool(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

func rel(path string) (string, bool) {
	if path == module {
		return ".", true
	}
	r, ok := strings.CutPrefix(path, module+"/")
	return r, ok
}

// load lists the module's packages in every configuration and merges them.
func load(t *testing.T, root string) graph {
	t.Helper()
	g := graph{}
	for _, c := range configs {
		args := []string{"list", "-deps", "-json"}
		if c.tags != "" {
			args = append(args, "-tags", c.tags)
		}
		out := run(t, root, c.env, append(args, "./...")...)
		all := map[string]*goList{}
		var order []*goList
		dec := json.NewDecoder(bytes.NewReader(out))
		for {
			var p goList
			if err := dec.Decode(&p); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: decoding go list: %v", c.name, err)
			}
			if p.Error != nil {
				t.Fatalf("%s: %s: %s", c.name, p.ImportPath, p.Error.Err)
			}
			all[p.ImportPath] = &p
			order = append(order, &p)
		}
		reachesTesting := func(path string) bool {
			if path == "testing" {
				return true
			}
			p := all[path]
			return p != nil && slices.Contains(p.Deps, "testing")
		}
		for _, p := range order {
			r, ok := rel(p.ImportPath)
			if !ok || p.Module == nil || p.Module.Path != module || len(p.GoFiles) == 0 {
				continue
			}
			q := g[r]
			if q == nil {
				q = &pkg{Rel: r, Name: p.Name, Mod: map[string]bool{}, Ext: map[string]bool{},
					ModDeps: map[string]bool{}, Carriers: map[string]bool{}}
				g[r] = q
			}
			for _, imp := range p.Imports {
				if ir, ok := rel(imp); ok {
					q.Mod[ir] = true
				} else if dep := all[imp]; dep == nil || !dep.Standard {
					q.Ext[imp] = true
				}
				if reachesTesting(imp) {
					q.Testing = true
					q.Carriers[imp] = true
				}
			}
			for _, d := range p.Deps {
				if dr, ok := rel(d); ok {
					q.ModDeps[dr] = true
				}
			}
		}
	}
	return g
}

func isTestSupport(p *pkg) bool { return strings.HasSuffix(p.Name, "test") }

// checkRules returns every violation of the import rules in g.
func checkRules(g graph) []string {
	var bad []string
	add := func(format string, a ...any) { bad = append(bad, fmt.Sprintf(format, a...)) }
	for _, r := range sortedKeys(g) {
		p := g[r]
		lv, inFlow := level[r]
		allowed, beside := side[r]
		if !inFlow && !beside {
			add("%s: not placed in the import flow: add it to archtest's level or side, and a row to docs/ARCHITECTURE.md", r)
			continue
		}
		for _, m := range sortedKeys(p.Mod) {
			switch {
			case beside && !slices.Contains(allowed, m):
				add("%s imports %s: it may import only %v of this module", r, m, allowed)
			case inFlow:
				if ml, ok := level[m]; ok && ml >= lv {
					add("%s imports %s: imports flow cmd -> bench -> redlock -> mux -> resp, never upward or sideways", r, m)
				}
			}
		}
		if strings.HasPrefix(r, "cmd/") {
			for _, m := range sortedKeys(p.Mod) {
				if !slices.Contains(cmdMay, m) {
					add("%s imports %s: a main imports only %v (its logic lives there)", r, m, cmdMay)
				}
			}
		}
		if slices.Contains(stdOnly, r) {
			for _, x := range sortedKeys(p.Mod) {
				add("%s imports %s: it imports the standard library only", r, x)
			}
			for _, x := range sortedKeys(p.Ext) {
				add("%s imports %s: it imports the standard library only", r, x)
			}
		}
		if r == "fakeserver" {
			for _, c := range clientCode {
				if p.ModDeps[c] {
					add("fakeserver reaches %s: the fake server never depends on client code", c)
				}
			}
		}
		if !isTestSupport(p) {
			if p.Testing {
				add("%s links package testing (through %v): only test-support packages (named *test) may", r, sortedKeys(p.Carriers))
			}
			for _, d := range sortedKeys(p.ModDeps) {
				if q := g[d]; q != nil && isTestSupport(q) {
					add("%s depends on test-support package %s: only _test.go files may import it", r, d)
				}
			}
		}
	}
	return bad
}

// docTable returns the rows of the Markdown table whose header row is
// header: each row's cells, trimmed.
func docTable(doc, header string) ([][]string, error) {
	lines := strings.Split(doc, "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) != header {
			continue
		}
		want := strings.Count(header, "|") - 1
		var rows [][]string
		for _, row := range lines[i+2:] {
			row = strings.TrimSpace(row)
			if !strings.HasPrefix(row, "|") {
				break
			}
			cells := strings.Split(strings.Trim(row, "|"), "|")
			if len(cells) != want {
				return nil, fmt.Errorf("row %q has %d cells, want %d (no | inside a cell)", row, len(cells), want)
			}
			for k := range cells {
				cells[k] = strings.TrimSpace(cells[k])
			}
			rows = append(rows, cells)
		}
		return rows, nil
	}
	return nil, fmt.Errorf("no table with header %q", header)
}

const (
	pkgHeader = "| package | what it is | imports (besides the standard library) |"
	depHeader = "| module | why |"
)

var codeSpan = regexp.MustCompile("`([^`]+)`")

// docImports parses the package table: package -> the imports it lists.
func docImports(doc string) (map[string]map[string]bool, error) {
	rows, err := docTable(doc, pkgHeader)
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]bool{}
	for _, c := range rows {
		name := codeSpan.FindStringSubmatch(c[0])
		if name == nil || name[0] != c[0] {
			return nil, fmt.Errorf("package cell %q: want one `path`", c[0])
		}
		if _, dup := out[name[1]]; dup {
			return nil, fmt.Errorf("package %s has two rows", name[1])
		}
		set := map[string]bool{}
		if c[2] != "none" {
			spans := codeSpan.FindAllStringSubmatch(c[2], -1)
			if len(spans) == 0 {
				return nil, fmt.Errorf("%s: imports cell %q: want `path`, ... or none", name[1], c[2])
			}
			for _, s := range spans {
				set[s[1]] = true
			}
		}
		out[name[1]] = set
	}
	return out, nil
}

// docDeps parses the dependency table: "module version" per row.
func docDeps(doc string) (map[string]bool, error) {
	rows, err := docTable(doc, depHeader)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, c := range rows {
		f := strings.Fields(c[0])
		if len(f) != 2 {
			return nil, fmt.Errorf("dependency cell %q: want \"module version\"", c[0])
		}
		out[f[0]+" "+f[1]] = true
	}
	return out, nil
}

// checkDoc compares the doc's tables with the package graph and go.mod's
// direct requirements ("module version" each).
func checkDoc(doc string, g graph, direct map[string]bool) []string {
	var bad []string
	add := func(format string, a ...any) { bad = append(bad, fmt.Sprintf(format, a...)) }
	table, err := docImports(doc)
	if err != nil {
		return []string{"docs/ARCHITECTURE.md package table: " + err.Error()}
	}
	for _, r := range sortedKeys(g) {
		want, ok := table[r]
		if !ok {
			add("docs/ARCHITECTURE.md has no row for package %s", r)
			continue
		}
		got := map[string]bool{}
		for m := range g[r].Mod {
			got[m] = true
		}
		for x := range g[r].Ext {
			got[x] = true
		}
		if missing, extra := diff(got, want); len(missing)+len(extra) > 0 {
			add("docs/ARCHITECTURE.md row %s: imports not listed %v, listed but not imported %v", r, missing, extra)
		}
	}
	for _, r := range sortedKeys(table) {
		if g[r] == nil {
			add("docs/ARCHITECTURE.md lists package %s, which does not exist", r)
		}
	}
	deps, err := docDeps(doc)
	if err != nil {
		return append(bad, "docs/ARCHITECTURE.md dependency table: "+err.Error())
	}
	if missing, extra := diff(direct, deps); len(missing)+len(extra) > 0 {
		add("go.mod's direct requirements and docs/ARCHITECTURE.md's dependency table differ: in go.mod only %v, in the doc only %v", missing, extra)
	}
	return bad
}

// goModDirect returns go.mod's direct requirements as "module version".
func goModDirect(t *testing.T, root string) map[string]bool {
	t.Helper()
	var m struct {
		Require []struct {
			Path, Version string
			Indirect      bool
		}
	}
	if err := json.Unmarshal(run(t, root, nil, "mod", "edit", "-json"), &m); err != nil {
		t.Fatalf("go mod edit -json: %v", err)
	}
	out := map[string]bool{}
	for _, r := range m.Require {
		if !r.Indirect {
			out[r.Path+" "+r.Version] = true
		}
	}
	return out
}

// diff returns the keys only in a and only in b, sorted.
func diff(a, b map[string]bool) (onlyA, onlyB []string) {
	for k := range a {
		if !b[k] {
			onlyA = append(onlyA, k)
		}
	}
	for k := range b {
		if !a[k] {
			onlyB = append(onlyB, k)
		}
	}
	sort.Strings(onlyA)
	sort.Strings(onlyB)
	return onlyA, onlyB
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func report(t *testing.T, what string, bad []string) {
	t.Helper()
	if len(bad) > 0 {
		t.Errorf("%s: %d violation(s):\n  %s", what, len(bad), strings.Join(bad, "\n  "))
	}
}

// TestArchitecture checks the module as it is.
func TestArchitecture(t *testing.T) {
	root := moduleRoot(t)
	g := load(t, root)
	for _, must := range []string{"resp", "mux", "redlock", "fakeserver", "bench", "cmd/redmux-bench"} {
		if g[must] == nil {
			t.Fatalf("package %s not found: go list found %v", must, sortedKeys(g))
		}
	}
	report(t, "import rules", checkRules(g))
	doc, err := os.ReadFile(filepath.Join(root, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	report(t, "docs/ARCHITECTURE.md", checkDoc(string(doc), g, goModDirect(t, root)))
}

// fixture is a small graph that obeys the rules, for the checkers' own
// tests: each case breaks it in one way and expects one violation.
func fixture() graph {
	mk := func(r, name string, mod ...string) *pkg {
		p := &pkg{Rel: r, Name: name, Mod: map[string]bool{}, Ext: map[string]bool{}, ModDeps: map[string]bool{}, Carriers: map[string]bool{}}
		for _, m := range mod {
			p.Mod[m] = true
			p.ModDeps[m] = true
		}
		return p
	}
	g := graph{
		"resp":                         mk("resp", "resp"),
		"mux":                          mk("mux", "mux", "resp"),
		"redlock":                      mk("redlock", "redlock", "mux", "resp", "redlock/scripts"),
		"redlock/scripts":              mk("redlock/scripts", "scripts"),
		"fakeserver":                   mk("fakeserver", "fakeserver", "redlock/scripts"),
		"bench":                        mk("bench", "bench", "redlock", "mux", "fakeserver"),
		"cmd/redmux-bench":             mk("cmd/redmux-bench", "main", "bench"),
		"internal/redisproc":           mk("internal/redisproc", "redisproc"),
		"internal/redisproc/redistest": mk("internal/redisproc/redistest", "redistest", "internal/redisproc"),
	}
	g["redlock"].ModDeps["resp"] = true
	g["bench"].ModDeps["resp"] = true
	g["internal/redisproc/redistest"].Testing = true
	g["fakeserver"].Ext["github.com/tidwall/redcon"] = true
	return g
}

// The rule checker passes the fixture and reports each planted breach.
func TestCheckRulesCatchesBreaches(t *testing.T) {
	if bad := checkRules(fixture()); len(bad) != 0 {
		t.Fatalf("fixture breaks the rules: %v", bad)
	}
	cases := []struct {
		name  string
		plant func(graph)
		want  string
	}{
		{"upward import", func(g graph) { g["mux"].Mod["redlock"] = true }, "mux imports redlock: imports flow"},
		{"sideways import", func(g graph) { g["bench"].Mod["cmd/redmux-bench"] = true }, "bench imports cmd/redmux-bench"},
		{"resp imports a module package", func(g graph) { g["resp"].Mod["redlock/scripts"] = true }, "resp imports redlock/scripts: it imports the standard library only"},
		{"resp imports a dependency", func(g graph) { g["resp"].Ext["golang.org/x/sys/unix"] = true }, "resp imports golang.org/x/sys/unix"},
		{"fakeserver imports mux", func(g graph) { g["fakeserver"].Mod["mux"] = true }, "fakeserver imports mux"},
		{"fakeserver reaches resp", func(g graph) { g["fakeserver"].ModDeps["resp"] = true }, "fakeserver reaches resp"},
		{"main imports mux", func(g graph) { g["cmd/redmux-bench"].Mod["mux"] = true }, "cmd/redmux-bench imports mux: a main imports only"},
		{"testing linked", func(g graph) {
			g["bench"].Testing = true
			g["bench"].Carriers["internal/redisproc"] = true
		}, "bench links package testing (through [internal/redisproc])"},
		{"test support linked", func(g graph) { g["bench"].ModDeps["internal/redisproc/redistest"] = true }, "bench depends on test-support package"},
		{"unplaced package", func(g graph) { g["newpkg"] = &pkg{Rel: "newpkg", Name: "newpkg"} }, "newpkg: not placed in the import flow"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := fixture()
			tc.plant(g)
			bad := checkRules(g)
			if len(bad) != 1 || !strings.Contains(bad[0], tc.want) {
				t.Fatalf("violations %q, want one containing %q", bad, tc.want)
			}
		})
	}
}

const fixtureDoc = "intro\n\n" + pkgHeader + `
| --- | --- | --- |
| ` + "`resp`" + ` | codec | none |
| ` + "`mux`" + ` | client | ` + "`resp`" + ` |
| ` + "`redlock`" + ` | lock | ` + "`mux`, `resp`, `redlock/scripts`" + ` |
| ` + "`redlock/scripts`" + ` | scripts | none |
| ` + "`fakeserver`" + ` | fake | ` + "`redlock/scripts`, `github.com/tidwall/redcon`" + ` |
| ` + "`bench`" + ` | bench | ` + "`redlock`, `mux`, `fakeserver`" + ` |
| ` + "`cmd/redmux-bench`" + ` | main | ` + "`bench`" + ` |
| ` + "`internal/redisproc`" + ` | procs | none |
| ` + "`internal/redisproc/redistest`" + ` | test support | ` + "`internal/redisproc`" + ` |

text

` + depHeader + `
| --- | --- |
| github.com/tidwall/redcon v1.6.2 | the fake's server loop |
| golang.org/x/sys v0.35.0 | epoll |
`

func fixtureDirect() map[string]bool {
	return map[string]bool{"github.com/tidwall/redcon v1.6.2": true, "golang.org/x/sys v0.35.0": true}
}

// The doc checker passes the fixture and reports each planted untruth.
func TestCheckDocCatchesUntruths(t *testing.T) {
	if bad := checkDoc(fixtureDoc, fixture(), fixtureDirect()); len(bad) != 0 {
		t.Fatalf("fixture doc is untrue: %v", bad)
	}
	cases := []struct {
		name  string
		doc   func(string) string
		plant func(graph, map[string]bool)
		want  string
	}{
		{"extra go.mod requirement", nil, func(_ graph, d map[string]bool) { d["github.com/valyala/bytebufferpool v1.0.0"] = true },
			"in go.mod only [github.com/valyala/bytebufferpool v1.0.0]"},
		{"other version in go.mod", nil, func(_ graph, d map[string]bool) {
			delete(d, "golang.org/x/sys v0.35.0")
			d["golang.org/x/sys v0.36.0"] = true
		}, "in go.mod only [golang.org/x/sys v0.36.0], in the doc only [golang.org/x/sys v0.35.0]"},
		{"dependency row without requirement", func(s string) string {
			return s + "| github.com/valyala/bytebufferpool v1.0.0 | pooled buffers |\n"
		}, nil, "in the doc only [github.com/valyala/bytebufferpool v1.0.0]"},
		{"import not in the table", nil, func(g graph, _ map[string]bool) { g["bench"].Ext["github.com/HdrHistogram/hdrhistogram-go"] = true },
			"row bench: imports not listed [github.com/HdrHistogram/hdrhistogram-go]"},
		{"table lists an import that is not there", func(s string) string {
			return strings.Replace(s, "| client | `resp` |", "| client | `resp`, `github.com/valyala/bytebufferpool` |", 1)
		}, nil, "row mux: imports not listed [], listed but not imported [github.com/valyala/bytebufferpool]"},
		{"package without a row", nil, func(g graph, _ map[string]bool) {
			g["newpkg"] = &pkg{Rel: "newpkg", Mod: map[string]bool{}, Ext: map[string]bool{}}
		},
			"no row for package newpkg"},
		{"row without a package", nil, func(g graph, _ map[string]bool) { delete(g, "cmd/redmux-bench") },
			"lists package cmd/redmux-bench, which does not exist"},
		{"malformed row", func(s string) string { return strings.Replace(s, "| codec | none |", "| codec | a|b | none |", 1) }, nil,
			"has 5 cells, want 3"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc, g, direct := fixtureDoc, fixture(), fixtureDirect()
			if tc.doc != nil {
				doc = tc.doc(doc)
			}
			if tc.plant != nil {
				tc.plant(g, direct)
			}
			bad := checkDoc(doc, g, direct)
			if len(bad) != 1 || !strings.Contains(bad[0], tc.want) {
				t.Fatalf("violations %q, want one containing %q", bad, tc.want)
			}
		})
	}
}
