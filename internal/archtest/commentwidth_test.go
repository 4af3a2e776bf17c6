package archtest

import (
	"fmt"
	"strings"
	"testing"
)

// maxCommentCols is the widest a comment line of the module's Go files
// may be, a tab counted as 4 columns (issue 49: the why sits on the field
// or method in short lines; long measurements belong in results/).
const maxCommentCols = 100

// wideComments returns "path:line: N columns" for each comment line of
// src over maxCommentCols. An Example's "// Output:" block is not prose:
// its lines are what the example prints, compared byte for byte.
func wideComments(path string, src []byte) []string {
	var bad []string
	output := false
	for i, line := range strings.Split(string(src), "\n") {
		t := strings.TrimSpace(line)
		if !strings.HasPrefix(t, "//") {
			output = false
			continue
		}
		if t == "// Output:" || t == "// Unordered output:" {
			output = true
			continue
		}
		if output {
			continue
		}
		if n := len(strings.ReplaceAll(line, "\t", "    ")); n > maxCommentCols {
			bad = append(bad, fmt.Sprintf("%s:%d: %d columns", path, i+1, n))
		}
	}
	return bad
}

func TestWideCommentsFinds(t *testing.T) {
	src := "package p\n\n// " + strings.Repeat("x", 97) + "\n\t// " + strings.Repeat("y", 94) + "\n" +
		"func Example() {\n\t// Output:\n\t// " + strings.Repeat("z", 120) + "\n}\n"
	got := wideComments("p.go", []byte(src))
	if len(got) != 1 || got[0] != "p.go:4: 101 columns" {
		t.Fatalf("got %q, want the one 101-column line", got)
	}
}

// TestCommentWidth: no comment line of the module's Go files (tests
// included; nested modules, testdata and hidden directories are not the
// module's) is over maxCommentCols.
func TestCommentWidth(t *testing.T) {
	root := moduleRoot(t)
	var bad []string
	err := walkModuleGo(root, true, func(rel string, src []byte) error {
		bad = append(bad, wideComments(rel, src)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Errorf("%s over %d: wrap it", b, maxCommentCols)
	}
}
