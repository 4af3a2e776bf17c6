package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// maxFuncLines is the longest a function of the module's non-test files may
// be, counted from its func line to its closing brace, both included (a
// method's name is Type.Name). A function that must stay longer for a time
// is listed in funcLenExceptions with the issue that will shorten it.
const maxFuncLines = 120

// funcLenExceptions are the functions allowed over maxFuncLines for now,
// by "path/file.go Name", each with the reason and the issue that removes
// it. An exception for a function that no longer exists or has come under
// the limit fails the test: delete it then.
var funcLenExceptions = map[string]string{}

// funcLen is one function's length.
type funcLen struct {
	where string // "path/file.go Name"
	line  int    // its func line
	lines int
}

// funcLengths returns the length of every function with a body in src.
func funcLengths(path string, src []byte) ([]funcLen, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var out []funcLen
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		name := fd.Name.Name
		if fd.Recv != nil && len(fd.Recv.List) == 1 {
			name = recvType(fd.Recv.List[0].Type) + "." + name
		}
		start, end := fset.Position(fd.Pos()).Line, fset.Position(fd.End()).Line
		out = append(out, funcLen{where: path + " " + name, line: start, lines: end - start + 1})
	}
	return out, nil
}

// recvType is a receiver's type name, without * or type parameters.
func recvType(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return recvType(x.X)
	case *ast.IndexExpr:
		return recvType(x.X)
	case *ast.IndexListExpr:
		return recvType(x.X)
	case *ast.Ident:
		return x.Name
	}
	return "?"
}

// walkModuleGo calls f with the slash path (relative to root) and text of
// every Go file of the module under root (tests only with tests), whatever
// their build tags; nested modules (interop/), testdata and hidden
// directories are not the module's.
func walkModuleGo(root string, tests bool, f func(rel string, src []byte) error) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p == root {
				return nil
			}
			name := d.Name()
			if name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || !tests && strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		r, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		return f(filepath.ToSlash(r), src)
	})
}

// moduleFuncLengths measures every function of the module's non-test Go
// files under root (walkModuleGo).
func moduleFuncLengths(root string) ([]funcLen, error) {
	var all []funcLen
	err := walkModuleGo(root, false, func(rel string, src []byte) error {
		fl, err := funcLengths(rel, src)
		all = append(all, fl...)
		return err
	})
	sort.SliceStable(all, func(i, j int) bool { return all[i].lines > all[j].lines })
	return all, err
}

// checkFuncLengths returns the functions over max not excepted, and the
// exceptions that are not needed (any more).
func checkFuncLengths(all []funcLen, max int, except map[string]string) []string {
	var bad []string
	over := map[string]bool{}
	for _, f := range all {
		if f.lines <= max {
			continue
		}
		over[f.where] = true
		if _, ok := except[f.where]; !ok {
			bad = append(bad, fmt.Sprintf("%s (line %d) is %d lines, over %d: split it", f.where, f.line, f.lines, max))
		}
	}
	for _, w := range sortedKeys(except) {
		if !over[w] {
			bad = append(bad, fmt.Sprintf("%s is excepted (%s) but is not over %d lines (or is gone): delete its exception", w, except[w], max))
		}
	}
	return bad
}

// TestFunctionLength: no non-test function over maxFuncLines lines, but
// the listed exceptions.
func TestFunctionLength(t *testing.T) {
	all, err := moduleFuncLengths(moduleRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 100 {
		t.Fatalf("found only %d functions", len(all))
	}
	for _, f := range all[:min(5, len(all))] {
		t.Logf("%4d lines  %s (line %d)", f.lines, f.where, f.line)
	}
	report(t, "function length", checkFuncLengths(all, maxFuncLines, funcLenExceptions))
}

// The length rule counts as documented and reports a planted long
// function, a method by its type, and a stale exception.
func TestFunctionLengthCatchesLongFunctions(t *testing.T) {
	body := func(n int) string { // a function of n lines
		return "{\n" + strings.Repeat("\t_ = 0\n", n-2) + "}\n"
	}
	src := "package p\n\nfunc short() " + body(120) + "\ntype T[K any] struct{}\n\nfunc (t *T[K]) Long() " + body(121) +
		"\nfunc noBody()\n"
	all, err := funcLengths("p/p.go", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(all); got != "[{p/p.go short 3 120} {p/p.go T.Long 126 121}]" {
		t.Fatalf("lengths %s", got)
	}
	bad := checkFuncLengths(all, 120, nil)
	if len(bad) != 1 || !strings.Contains(bad[0], "p/p.go T.Long (line 126) is 121 lines, over 120") {
		t.Fatalf("violations %q", bad)
	}
	if bad := checkFuncLengths(all, 120, map[string]string{"p/p.go T.Long": "issue 1"}); len(bad) != 0 {
		t.Fatalf("excepted function reported: %q", bad)
	}
	bad = checkFuncLengths(all, 120, map[string]string{"p/p.go T.Long": "issue 1", "p/p.go short": "issue 2"})
	if len(bad) != 1 || !strings.Contains(bad[0], "p/p.go short is excepted (issue 2) but is not over 120") {
		t.Fatalf("violations %q", bad)
	}
}
