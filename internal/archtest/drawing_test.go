package archtest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The drawing under "## Packages and import flow" shows the shape of the
// import graph: "a ──> b" on a line, or a branch "├──> b" / "└──> b" under
// the package whose name sits above the branch's column. Every arrow must
// be a direct import of the package it starts from (in some build CI
// checks); a module package or external module the drawing names must
// exist. The drawing need not show every import (the table is exact).

// drawingEdge is one arrow of the drawing.
type drawingEdge struct{ from, to string }

var (
	drawToken = regexp.MustCompile(`[A-Za-z0-9_.][A-Za-z0-9_./-]*`)
	drawParen = regexp.MustCompile(`\([^)]*\)?`)
)

// drawing returns the indented block that follows the heading.
func drawing(doc string) ([]string, error) {
	const heading = "## Packages and import flow"
	i := strings.Index(doc, heading)
	if i < 0 {
		return nil, fmt.Errorf("no %q heading", heading)
	}
	var out []string
	started := false
	for _, line := range strings.Split(doc[i+len(heading):], "\n") {
		if strings.HasPrefix(line, "    ") {
			started = true
			out = append(out, line)
			continue
		}
		if started {
			break
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no drawing under %q", heading)
	}
	return out, nil
}

// span is a package name's place on a drawing line, in runes.
type span struct {
	start, end int
	name       string
}

// drawingEdges reads the arrows of the drawing's lines.
func drawingEdges(lines []string) ([]drawingEdge, error) {
	spans := make([][]span, len(lines))
	rows := make([][]rune, len(lines))
	for li, line := range lines {
		// Text in parentheses is commentary: blank it, keeping columns.
		line = drawParen.ReplaceAllStringFunc(line, func(s string) string { return strings.Repeat(" ", len([]rune(s))) })
		// An unclosed comment from the line above ends at ")".
		if k := strings.Index(line, ")"); k >= 0 {
			line = strings.Repeat(" ", len([]rune(line[:k+1]))) + line[k+1:]
		}
		r := []rune(line)
		rows[li] = r
		for _, m := range drawToken.FindAllStringIndex(line, -1) {
			start := len([]rune(line[:m[0]]))
			end := start + len([]rune(line[m[0]:m[1]]))
			spans[li] = append(spans[li], span{start, end, line[m[0]:m[1]]})
		}
	}
	// owner finds the package above column col, from line li up.
	owner := func(li, col int) (string, bool) {
		for k := li - 1; k >= 0; k-- {
			for _, s := range spans[k] {
				if col >= s.start && col < s.end {
					return s.name, true
				}
			}
			if col < len(rows[k]) && (rows[k][col] == '│' || rows[k][col] == '├') {
				continue
			}
		}
		return "", false
	}
	var edges []drawingEdge
	for li, r := range rows {
		last := "" // the source of the line's last arrow, for "──> a, b"
		for i, s := range spans[li] {
			// What leads into this name: "──>" right before it, or a comma
			// after another target of the same arrow.
			lead := strings.TrimRight(string(r[:s.start]), " ")
			if strings.HasSuffix(lead, ",") && last != "" {
				edges = append(edges, drawingEdge{last, s.name})
				continue
			}
			if !strings.HasSuffix(lead, "──>") {
				last = ""
				continue
			}
			lead = strings.TrimSuffix(lead, ">")
			lead = strings.TrimRight(lead, "─")
			switch {
			case strings.HasSuffix(lead, "└") || strings.HasSuffix(lead, "├"):
				col := len([]rune(lead)) - 1
				from, ok := owner(li, col)
				if !ok {
					return nil, fmt.Errorf("drawing line %d: the branch to %s has no package above it", li+1, s.name)
				}
				edges = append(edges, drawingEdge{from, s.name})
				last = from
			case i > 0:
				edges = append(edges, drawingEdge{spans[li][i-1].name, s.name})
				last = spans[li][i-1].name
			default:
				return nil, fmt.Errorf("drawing line %d: an arrow to %s from nothing", li+1, s.name)
			}
		}
	}
	return edges, nil
}

// checkDrawing returns the drawing's arrows that are not imports.
func checkDrawing(doc string, g graph) []string {
	lines, err := drawing(doc)
	if err != nil {
		return []string{err.Error()}
	}
	edges, err := drawingEdges(lines)
	if err != nil {
		return []string{err.Error()}
	}
	var bad []string
	for _, e := range edges {
		p := g[e.from]
		switch {
		case p == nil:
			bad = append(bad, fmt.Sprintf("drawing: %s ──> %s starts at %s, which is not a package of the module", e.from, e.to, e.from))
		case g[e.to] != nil && !p.Mod[e.to]:
			bad = append(bad, fmt.Sprintf("drawing: %s ──> %s, but %s does not import %s", e.from, e.to, e.from, e.to))
		case g[e.to] == nil && strings.Contains(e.to, "."):
			if !p.Ext[e.to] {
				bad = append(bad, fmt.Sprintf("drawing: %s ──> %s, but %s does not import %s", e.from, e.to, e.from, e.to))
			}
		case g[e.to] == nil:
			bad = append(bad, fmt.Sprintf("drawing: %s ──> %s ends at %s, which is not a package of the module", e.from, e.to, e.to))
		}
	}
	return bad
}

// docPath is a repository path the doc names: in a code span, or a bare
// results/ or docs/ path.
var docPath = regexp.MustCompile("`([A-Za-z0-9_.-]+/[A-Za-z0-9_./-]*[A-Za-z0-9_])`|\\b((?:results|docs)/[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)*)")

// checkPaths returns the paths the doc names that do not exist under root.
// A code span counts as a path when its first element is a top-level
// entry of the repository (so `redis://host` or `a/b` prose is not one).
func checkPaths(doc, root string) []string {
	var bad []string
	seen := map[string]bool{}
	for _, m := range docPath.FindAllStringSubmatch(doc, -1) {
		p := m[1]
		if p == "" {
			p = m[2]
		}
		p = strings.TrimRight(p, ".")
		if seen[p] || strings.ContainsAny(p, "*{}<>") {
			continue
		}
		seen[p] = true
		top := strings.SplitN(p, "/", 2)[0]
		if _, err := os.Stat(filepath.Join(root, top)); err != nil {
			continue // not a repository path (an import path, a URL)
		}
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			bad = append(bad, "names "+p+", which does not exist")
		}
	}
	return bad
}

// TestArchitectureDrawingAndPaths checks the drawing's arrows and the
// paths docs/ARCHITECTURE.md names against the module as it is.
func TestArchitectureDrawingAndPaths(t *testing.T) {
	root := moduleRoot(t)
	g := load(t, root)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines, err := drawing(string(doc))
	if err != nil {
		t.Fatal(err)
	}
	edges, err := drawingEdges(lines)
	if err != nil {
		t.Fatal(err)
	}
	if len(edges) < 10 {
		t.Fatalf("read only %d arrows from the drawing: %v", len(edges), edges)
	}
	t.Logf("%d arrows: %v", len(edges), edges)
	report(t, "docs/ARCHITECTURE.md drawing", checkDrawing(string(doc), g))
	report(t, "docs/ARCHITECTURE.md paths", checkPaths(string(doc), root))
}

const fixtureDrawing = "## Packages and import flow\n\n" +
	"    cmd/redmux-bench ──> bench ──> redlock ──> mux ──> resp\n" +
	"                          │  │        └──> redlock/scripts   (the Lua texts)\n" +
	"                          │  └──> fakeserver ──> redlock/scripts\n" +
	"                          │          └──> github.com/tidwall/redcon, redlock/scripts\n" +
	"                          └──> mux\n" +
	"\ntext\n"

// The drawing checker reads the fixture's arrows and reports each planted
// wrong one.
func TestCheckDrawingCatchesWrongArrows(t *testing.T) {
	lines, err := drawing(fixtureDrawing)
	if err != nil {
		t.Fatal(err)
	}
	edges, err := drawingEdges(lines)
	if err != nil {
		t.Fatal(err)
	}
	want := []drawingEdge{
		{"cmd/redmux-bench", "bench"}, {"bench", "redlock"}, {"redlock", "mux"}, {"mux", "resp"},
		{"redlock", "redlock/scripts"}, {"bench", "fakeserver"}, {"fakeserver", "redlock/scripts"},
		{"fakeserver", "github.com/tidwall/redcon"}, {"fakeserver", "redlock/scripts"}, {"bench", "mux"},
	}
	if fmt.Sprint(edges) != fmt.Sprint(want) {
		t.Fatalf("arrows\n %v\nwant\n %v", edges, want)
	}
	if bad := checkDrawing(fixtureDrawing, fixture()); len(bad) != 0 {
		t.Fatalf("fixture drawing is untrue: %v", bad)
	}
	cases := []struct{ name, old, new, want string }{
		{"reversed arrow", "mux ──> resp", "resp ──> mux", "resp ──> mux, but resp does not import mux"},
		{"branch under the wrong package", "                          │  │        └──> redlock/scripts",
			"                          │  └──> redlock/scripts   ", "bench ──> redlock/scripts, but bench does not import redlock/scripts"},
		{"external module not imported", "github.com/tidwall/redcon", "github.com/yuin/gopher-lua",
			"fakeserver ──> github.com/yuin/gopher-lua, but fakeserver does not import"},
		{"package that does not exist", "──> resp\n", "──> respx\n", "ends at respx, which is not a package"},
		{"second of a comma list", "redcon, redlock/scripts", "redcon, mux", "fakeserver ──> mux, but fakeserver does not import mux"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc := strings.Replace(fixtureDrawing, tc.old, tc.new, 1)
			if doc == fixtureDrawing {
				t.Fatalf("the plant %q was not found", tc.old)
			}
			bad := checkDrawing(doc, fixture())
			if len(bad) != 1 || !strings.Contains(bad[0], tc.want) {
				t.Fatalf("violations %q, want one containing %q", bad, tc.want)
			}
		})
	}
}

// The path checker reports a named file that is not there.
func TestCheckPathsCatchesMissingFiles(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{"mux/conn.go", "results/pipelining/README.md"} {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	doc := "see `mux/conn.go` and results/pipelining, and `redis://host/0`, `golang.org/x/sys`"
	if bad := checkPaths(doc, root); len(bad) != 0 {
		t.Fatalf("true doc reported: %v", bad)
	}
	bad := checkPaths(doc+", `mux/gone.go` and results/nothing-here.", root)
	want := []string{"names mux/gone.go, which does not exist", "names results/nothing-here, which does not exist"}
	if fmt.Sprint(bad) != fmt.Sprint(want) {
		t.Fatalf("got %q, want %q", bad, want)
	}
}
