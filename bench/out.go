package bench

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// errOutNotEmpty is returned (as a *usageError, before anything runs) for
// an -out directory that exists and is not empty, without -force.
var errOutNotEmpty = errors.New("-out directory not empty")

// checkOut refuses an -out directory given on the command line that
// exists and holds anything, unless -force: a run must not write over
// another's report silently. The default directory (results/latest) is
// the latest run's by name and is written over.
func checkOut(c *Config) error {
	if c.Out == "" || c.Force || !c.OutSet {
		return nil
	}
	names, err := outContents(c.Out)
	if err != nil || len(names) == 0 {
		return err
	}
	return &outError{dir: c.Out, fresh: freshOut(c.Out), names: names}
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
