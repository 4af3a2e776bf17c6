package bench

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redmux/redmux/bench/internal/report"
)

// An -out directory that holds anything is refused before the run (exit
// 2, its files untouched), with an error naming -force and a new
// directory; -force writes over it; an empty or missing one is used; the
// default directory is written over.
func TestOutRefusesNonEmptyDir(t *testing.T) {
	base := t.TempDir()
	mk := func(name string, files ...string) string {
		d := filepath.Join(base, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if err := os.WriteFile(filepath.Join(d, f), []byte("keep me"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	run := []string{"-fake", "1", "-strategy", "mux", "-c", "1", "-n", "20", "-warmup", "0s", "-quiet"}
	sweep := []string{"sweep", "-fake", "1", "-strategy", "mux", "-c", "1", "-rates", "50", "-refine", "0", "-step", "100ms", "-warmup", "0s", "-quiet"}
	tests := []struct {
		name    string
		args    []string
		dir     string // -out ("" = the default, in a fresh working directory)
		code    int
		written string // report file expected afterwards ("" = none)
	}{
		{"not empty", run, mk("full", "report.md", "notes.txt"), ExitUsage, ""},
		{"not empty, -force", append(run, "-force"), mk("forced", "notes.txt"), ExitOK, report.FileReport},
		{"empty", run, mk("empty"), ExitOK, report.FileReport},
		{"missing", run, filepath.Join(base, "new", "dir"), ExitOK, report.FileReport},
		{"a file", run, filepath.Join(mk("file", "f"), "f"), ExitUsage, ""},
		{"sweep not empty", sweep, mk("sweepfull", "sweep.md"), ExitUsage, ""},
		{"sweep not empty, -force", append(sweep, "-force"), mk("sweepforced", "sweep.md"), ExitOK, report.FileSweepReport},
		{"default dir written over", run, "", ExitOK, report.FileReport},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string(nil), tc.args...)
			dir := tc.dir
			if dir == "" {
				wd := t.TempDir()
				t.Chdir(wd)
				dir = filepath.Join(wd, defaultOut)
				mk := filepath.Join(wd, defaultOut)
				if err := os.MkdirAll(mk, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(mk, report.FileReport), []byte("old"), 0o644); err != nil {
					t.Fatal(err)
				}
			} else {
				args = append(args, "-out", dir)
			}
			var out, errb bytes.Buffer
			code := Main(args, &out, &errb, noEnv)
			if code != tc.code {
				t.Fatalf("exit %d, want %d: %s", code, tc.code, errb.String())
			}
			notice := "holds the previous run's files (" + report.FileReport + "): they are replaced; give -out "
			if said := strings.Contains(errb.String(), notice); said != (tc.dir == "") {
				t.Errorf("notice of the default directory written over: said %v, want %v: %q", said, tc.dir == "", errb.String())
			}
			if tc.code == ExitUsage {
				msg := errb.String()
				if strings.Count(msg, "\n") != 1 {
					t.Errorf("want one line: %q", msg)
				}
				notEmpty := strings.Contains(tc.name, "not empty")
				if notEmpty && !strings.Contains(msg, "add -force to write over it") {
					t.Errorf("%q does not name -force", msg)
				}
				if notEmpty && !strings.Contains(msg, "pick a new directory (e.g. -out "+dir+"-") {
					t.Errorf("%q does not offer a new directory", msg)
				}
				if !notEmpty && !strings.Contains(msg, "not a directory") {
					t.Errorf("%q", msg)
				}
				if out.Len() != 0 {
					t.Errorf("something ran: %q", out.String())
				}
			}
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
				if e.Name() == "notes.txt" && string(b) != "keep me" {
					t.Errorf("%s changed", e.Name())
				}
				if tc.code == ExitUsage && string(b) != "keep me" {
					t.Errorf("refused, yet %s was written", e.Name())
				}
			}
			if tc.written != "" {
				b, err := os.ReadFile(filepath.Join(dir, tc.written))
				if err != nil || len(b) < 100 {
					t.Errorf("%s not written (%v)", tc.written, err)
				}
			}
		})
	}
	err := checkOut(&Config{Out: mk("direct", "x"), OutSet: true})
	if !errors.Is(err, errOutNotEmpty) || !errors.Is(err, ErrUsage) {
		t.Errorf("checkOut: %v, want errOutNotEmpty and ErrUsage", err)
	}
}

// -json, -csv and -hlog files that could not be written after the run are
// refused before it (exit 2, nothing run, nothing claimed); an -hlog in
// the -out directory is written (the directory first); and a file that
// fails to be written after the run keeps neither the others nor the -out
// directory from being written, and no error names a report that is not
// there.
func TestOutputFilesCheckedBeforeTheRun(t *testing.T) {
	base := t.TempDir()
	run := []string{"-fake", "1", "-strategy", "mux", "-c", "1", "-n", "20", "-warmup", "0s", "-quiet"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-json", filepath.Join(base, "missing", "x.json")}, "does not exist"},
		{[]string{"-csv", base}, "is a directory"},
		{[]string{"-hlog", filepath.Join(base, "missing", "x.hlog")}, "does not exist"},
		{[]string{"-json", filepath.Join(base, "same"), "-csv", filepath.Join(base, "same")}, "the same file as -json"},
	} {
		out := filepath.Join(base, "out-refused")
		var stdout, stderr bytes.Buffer
		code := Main(append(append(run, "-out", out), tc.args...), &stdout, &stderr, noEnv)
		if code != ExitUsage || !strings.Contains(stderr.String(), tc.want) || strings.Contains(stderr.String(), "report:") {
			t.Errorf("%v: exit %d, %q; want exit 2 and %q", tc.args, code, stderr.String(), tc.want)
		}
		if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%v: -out written: %v", tc.args, err)
		}
	}

	out := filepath.Join(base, "out")
	var stdout, stderr bytes.Buffer
	if code := Main(append(run, "-out", out, "-hlog", filepath.Join(out, "run.hlog")), &stdout, &stderr, noEnv); code != ExitOK {
		t.Fatalf("-hlog in -out: exit %d: %s", code, stderr.String())
	}
	for _, f := range []string{"run.hlog", report.FileReport} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("-hlog in -out: %v", err)
		}
	}

	// a -json that fails after the run (its directory gone meanwhile)
	dir := filepath.Join(base, "late")
	a := &artifacts{
		json:  func(w io.Writer) error { _, err := io.WriteString(w, "{}"); return err },
		csv:   func(w io.Writer) error { _, err := io.WriteString(w, "a,b"); return err },
		files: []artifact{{report.FileReport, func(w io.Writer) error { _, err := io.WriteString(w, "# report"); return err }}},
	}
	cfg := &Config{Out: filepath.Join(dir, "out"), JSON: filepath.Join(dir, "gone", "x.json"), CSV: filepath.Join(dir, "x.csv")}
	if err := a.write(cfg, io.Discard); err == nil || !strings.Contains(err.Error(), "x.json") {
		t.Fatalf("write: %v, want the -json file's error", err)
	}
	for _, f := range []string{filepath.Join(dir, "out", report.FileReport), filepath.Join(dir, "x.csv")} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("not written past the failed -json: %v", err)
		}
	}
	if got := reportAt(filepath.Join(dir, "none"), report.FileReport); got != "" {
		t.Errorf("reportAt of a report never written: %q", got)
	}
}
