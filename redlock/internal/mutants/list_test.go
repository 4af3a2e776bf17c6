package main

import (
	"bytes"
	"os"
	"path/filepath"
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
