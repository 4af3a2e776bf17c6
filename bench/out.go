package bench

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// errOutNotEmpty is returned (as a *usageError, before anything runs) for
// an -out directory that exists and is not empty, without -force.
var errOutNotEmpty = errors.New("-out directory not empty")

// checkOut refuses, before the run, outputs that could not be written
// after it (checkFiles), and an -out directory given on the command line
// that exists and holds anything, unless -force: a run must not write over
// another's report silently. The default directory (results/latest) is
// the latest run's by name and is written over.
func checkOut(c *Config) error {
	if err := checkFiles(c); err != nil {
		return err
	}
	if c.Out == "" || c.Force || !c.OutSet {
		return nil
	}
	names, err := outContents(c.Out)
	if err != nil || len(names) == 0 {
		return err
	}
	return &outError{dir: c.Out, fresh: freshOut(c.Out), names: names}
}

// checkFiles refuses -json, -csv and -hlog files that could not be
// written once the run is over: one that is a directory, one in a
// directory that does not exist (the -out directory, made with the
// report, excepted), two flags naming the same file.
func checkFiles(c *Config) error {
	seen := map[string]string{}
	for _, f := range []struct{ flag, path string }{{"-json", c.JSON}, {"-csv", c.CSV}, {"-hlog", c.Hlog}} {
		if f.path == "" || f.path == "-" && f.flag != "-hlog" {
			continue
		}
		clean := filepath.Clean(f.path)
		if other, ok := seen[clean]; ok {
			return usagef("%s %s: the same file as %s", f.flag, f.path, other)
		}
		seen[clean] = f.flag
		if st, err := os.Stat(clean); err == nil && st.IsDir() {
			return usagef("%s %s: is a directory", f.flag, f.path)
		}
		dir := filepath.Dir(clean)
		if c.Out != "" && dir == filepath.Clean(c.Out) {
			continue
		}
		st, err := os.Stat(dir)
		switch {
		case errors.Is(err, os.ErrNotExist):
			return usagef("%s %s: directory %s does not exist", f.flag, f.path, dir)
		case err != nil:
			return usagef("%s %s: %v", f.flag, f.path, err)
		case !st.IsDir():
			return usagef("%s %s: %s is not a directory", f.flag, f.path, dir)
		}
	}
	return nil
}

// outNotice is what a run says before it writes over the default -out
// directory (results/latest, not given on the command line) when that
// holds files: the previous run's report is replaced, and how to keep it.
// "" when there is nothing to say.
func outNotice(c *Config) string {
	if c.Out == "" || c.OutSet {
		return ""
	}
	names, err := outContents(c.Out)
	if err != nil || len(names) == 0 {
		return ""
	}
	return fmt.Sprintf("%s holds the previous run's files (%s): they are replaced; give -out %s to keep both",
		c.Out, heldList(names), freshOut(c.Out))
}

// outContents returns up to 3 names in dir (none when it does not exist).
func outContents(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, usagef("-out %s: %v", dir, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, usagef("-out %s: %v", dir, err)
	}
	if !st.IsDir() {
		return nil, usagef("-out %s: not a directory", dir)
	}
	names, err := f.Readdirnames(3)
	if len(names) == 0 && err != nil && !errors.Is(err, io.EOF) {
		return nil, usagef("-out %s: %v", dir, err)
	}
	return names, nil
}

func freshOut(dir string) string {
	return strings.TrimSuffix(dir, "/") + "-" + time.Now().Format("20060102-150405")
}

func heldList(names []string) string {
	held := strings.Join(names, ", ")
	if len(names) == 3 {
		held += ", ..."
	}
	return held
}

type outError struct {
	dir, fresh string
	names      []string
}

func (e *outError) Error() string {
	return fmt.Sprintf("-out %s exists and is not empty (%s): add -force to write over it, or pick a new directory (e.g. -out %s)", e.dir, heldList(e.names), e.fresh)
}

func (e *outError) Is(target error) bool { return target == ErrUsage || target == errOutNotEmpty }
