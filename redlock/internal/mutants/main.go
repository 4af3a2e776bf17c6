// Command mutants is redlock's mutation suite (make mutants): it plants
// each bug of list.go in a scratch copy of the module, runs the safety
// checker's test on it, and requires the test to fail with violations. It
// prints a table of violation counts and times and exits non-zero if a
// mutant survives, if a mutant's text is no longer in the code, or if the
// unmutated copy is not clean.
//
//	go run ./redlock/internal/mutants [-short] [-run regexp] [-max 120s]
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

func main() {
	short := flag.Bool("short", false, "only the mutants marked Short (CI)")
	only := flag.String("run", "", "only mutants whose name matches this regexp")
	maxRun := flag.Duration("max", 120*time.Second, "time limit of the checker's run per mutant")
	control := flag.Duration("control", 60*time.Second, "first run the checker on the unmutated copy (2,000 acquisitions, at most this long; 0: skip)")
	keep := flag.Bool("keep", false, "keep the scratch copies (printed)")
	flag.BoolVar(&overlapsOnly, "overlaps-only", false, "count a mutant caught only by overlapping claims (not by contract or leftover checks): shows what mutual exclusion alone sees")
	flag.Parse()
	os.Exit(run(*short, *only, *maxRun, *control, *keep))
}

var overlapsOnly bool

type outcome struct {
	m        Mutant
	caught   bool
	counts   string
	elapsed  time.Duration
	problem  string
	acquired string
	sample   string
	wall     time.Duration // copy, build and run
}

func run(short bool, only string, maxRun, control time.Duration, keep bool) int {
	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "mutants:", err)
		return 2
	}
	var re *regexp.Regexp
	if only != "" {
		if re, err = regexp.Compile(only); err != nil {
			fmt.Fprintln(os.Stderr, "mutants: -run:", err)
			return 2
		}
	}
	files, err := listFiles(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mutants:", err)
		return 2
	}
	// Every mutant's text must be present exactly once before anything
	// runs: a stale list fails at once.
	var sel []Mutant
	bad := 0
	for _, m := range mutants {
		for _, e := range m.Edits {
			b, err := os.ReadFile(filepath.Join(root, e.File))
			if err != nil {
				fmt.Fprintf(os.Stderr, "mutants: %s: %v\n", m.Name, err)
				bad++
				continue
			}
			if n := bytes.Count(b, []byte(e.Old)); n != 1 {
				fmt.Fprintf(os.Stderr, "mutants: %s: the text to replace occurs %d times in %s (want exactly 1): the code changed, update the mutant:\n%s\n", m.Name, n, e.File, e.Old)
				bad++
			}
		}
		if (!short || m.Short) && (re == nil || re.MatchString(m.Name)) {
			sel = append(sel, m)
		}
	}
	if bad > 0 {
		return 2
	}
	start := time.Now()
	if control > 0 {
		fmt.Printf("control: the unmutated copy, %v of the checker ...\n", control)
		o := runOne(root, files, Mutant{Name: "control", Test: safetyTest}, control, keep, true)
		if o.caught || !strings.HasPrefix(o.problem, "survived") {
			fmt.Printf("control FAILED: %s %s\n", o.problem, o.counts)
			return 1
		}
		fmt.Printf("control clean: %s, %s in %v\n", o.counts, o.acquired, o.elapsed.Round(time.Second))
	}
	var outs []outcome
	for _, m := range sel {
		fmt.Printf("mutant %s (%s) ...\n", m.Name, m.Class)
		t0 := time.Now()
		o := runOne(root, files, m, max(maxRun, m.Max), keep, false)
		o.wall = time.Since(t0)
		fmt.Printf("  caught=%v %s %s %s\n", o.caught, o.counts, o.elapsed.Round(100*time.Millisecond), o.problem)
		if o.sample != "" {
			fmt.Printf("  first: %s\n", o.sample)
		}
		outs = append(outs, o)
	}
	fmt.Printf("\n| mutant | planted bug | test | caught | violations at the stop | acquisitions | checker time | wall (build+run) |\n|---|---|---|---|---|---|---|---|\n")
	survived := 0
	for _, o := range outs {
		c := "**yes**"
		if !o.caught {
			c = "**NO** " + o.problem
			survived++
		}
		fmt.Printf("| %s | %s | %s | %s | %s | %s | %v | %v |\n", o.m.Name, o.m.Class, o.m.Test, c, o.counts, strings.TrimSuffix(o.acquired, " acquisitions"),
			o.elapsed.Round(100*time.Millisecond), o.wall.Round(time.Second))
	}
	fmt.Printf("\n%d mutants, %d caught, %d survived; total %v (checker limit %v per mutant)\n",
		len(outs), len(outs)-survived, survived, time.Since(start).Round(time.Second), maxRun)
	if survived > 0 {
		return 1
	}
	return 0
}

// summaryRE reads the checker's summary line: overlaps=N, one name=N per
// contract, leftovers=N, then acquisitions and elapsed.
var summaryRE = regexp.MustCompile(`CHECKER-SUMMARY (overlaps=\d+(?: [a-z0-9-]+=\d+)*) acquisitions=(\d+) elapsed=(\S+)`)

// runOne copies the module, applies m, runs m's test and reads the
// checker's summary line.
func runOne(root string, files []string, m Mutant, maxRun time.Duration, keep, isControl bool) outcome {
	o := outcome{m: m}
	dir, err := os.MkdirTemp("", "redmux-mutant-"+m.Name+"-")
	if err != nil {
		o.problem = err.Error()
		return o
	}
	if keep {
		fmt.Println("  scratch copy:", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	if err := copyFiles(root, dir, files); err != nil {
		o.problem = err.Error()
		return o
	}
	for _, e := range m.Edits {
		p := filepath.Join(dir, e.File)
		b, err := os.ReadFile(p)
		if err != nil {
			o.problem = err.Error()
			return o
		}
		if bytes.Count(b, []byte(e.Old)) != 1 {
			o.problem = "text to replace not found once in " + e.File
			return o
		}
		b = bytes.Replace(b, []byte(e.Old), []byte(e.New), 1)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			o.problem = err.Error()
			return o
		}
	}
	// The checker stops at maxRun; a test still running minutes after
	// that hangs, and its goroutines are what to keep (hangReport).
	args := []string{"test", "-count=1", "-v", "-timeout", (maxRun + 5*time.Minute).String(), "-run", "^" + m.Test + "$", "./redlock", "-safety.max=" + maxRun.String()}
	if isControl {
		args = append(args, "-safety.acquisitions=2000")
	} else {
		args = append(args, "-safety.acquisitions=10000000", "-safety.stop")
		if overlapsOnly {
			args = append(args, "-safety.overlaps-only")
		}
	}
	if m.Scripted {
		pkg := m.Pkg
		if pkg == "" {
			pkg = "./redlock"
		}
		args = []string{"test", "-count=1", "-v", "-run", "^" + m.Test + "$", pkg}
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	if len(m.Env) > 0 {
		cmd.Env = append(os.Environ(), m.Env...)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	t0 := time.Now()
	err = cmd.Run()
	text := out.String()
	if m.Scripted {
		// a scripted test has no checker summary: caught when it fails
		// (built, ran, and said so for itself)
		o.elapsed = time.Since(t0)
		judgeScripted(&o, text, err)
		if !o.caught {
			o.problem += hangReport(m.Name, text)
		}
		return o
	}
	sm := summaryRE.FindStringSubmatch(text)
	if sm == nil {
		if h := hangReport(m.Name, text); h != "" {
			o.problem = "no checker summary: the test hung" + h
			return o
		}
		o.problem = "no checker summary (build failure or crash?): " + tail(text, 1500)
		return o
	}
	o.acquired = sm[2] + " acquisitions"
	o.elapsed, _ = time.ParseDuration(sm[3])
	if m := sampleRE.FindStringSubmatch(text); m != nil {
		o.sample = tail(m[1], 300)
	}
	total := 0
	var counts []string
	for _, kv := range strings.Fields(sm[1]) {
		name, val, _ := strings.Cut(kv, "=")
		var n int
		fmt.Sscan(val, &n)
		if n > 0 || name == "overlaps" {
			counts = append(counts, name+" "+val)
		}
		if !overlapsOnly || name == "overlaps" {
			total += n
		}
	}
	o.counts = strings.Join(counts, ", ")
	var ee *exec.ExitError
	switch {
	case total > 0 && errors.As(err, &ee):
		o.caught = true
	case total > 0:
		o.problem = "violations counted but the test passed"
	case overlapsOnly && err != nil:
		o.problem = "no overlap (other checks: see the counts)"
	case err != nil:
		o.problem = "the test failed without violations: " + tail(text, 1500)
	default:
		o.problem = "survived (" + o.acquired + ")"
	}
	return o
}

var sampleRE = regexp.MustCompile(`(?m)Messages:\s+(?:safety violated|keys left behind): (.*)$`)

// judgeScripted reads a scripted mutant's test run (its output and exit
// error) into o: caught when the test failed, not run when it skipped (io_uring
// refused, say) or did not run.
func judgeScripted(o *outcome, text string, err error) {
	var ee *exec.ExitError
	switch {
	case strings.Contains(text, "--- SKIP: "+o.m.Test) || strings.Contains(text, "SKIPPED"):
		// io_uring refused here, say: the mutant was not tested, and
		// a skip must not pass for caught or for survived
		o.problem = "NOT RUN: the scripted test skipped (" + skipLine(text) + "): run it where it can run"
		fmt.Printf("  NOT RUN: %s skipped: %s\n", o.m.Test, skipLine(text))
	case !strings.Contains(text, "=== RUN   "+o.m.Test):
		o.problem = "NOT RUN: no test " + o.m.Test + " ran: " + tail(text, 1500)
	case strings.Contains(text, "--- FAIL: "+o.m.Test) && errors.As(err, &ee):
		o.caught, o.counts, o.acquired = true, "scripted test failed", "-"
		if sm := sampleRE2.FindStringSubmatch(text); sm != nil {
			o.sample = tail(sm[1], 300)
		}
	case err != nil:
		o.problem = "the test did not run to a failure (build failure?): " + tail(text, 1500)
	default:
		o.problem = "survived (the scripted test passed)"
	}
}

// skipLine is the first line of a scripted run's output that says why it
// skipped.
func skipLine(text string) string {
	for _, ln := range strings.Split(text, "\n") {
		if strings.Contains(ln, "SKIPPED") || strings.Contains(ln, "--- SKIP") {
			return strings.TrimSpace(ln)
		}
	}
	return "skipped"
}

// sampleRE2 is a scripted test's first failure message.
var sampleRE2 = regexp.MustCompile(`(?m)Messages:\s+(.*)$`)

// hangReport is what a timed-out test run leaves to read: go test's
// goroutine dump, its goroutines grouped by state and by their redmux
// frames, the largest groups first (the tail of the output, all a CI log
// may keep, held only the last goroutine); the whole output goes to a
// file. It is "" when the run did not time out.
func hangReport(name, text string) string {
	i := strings.Index(text, "panic: test timed out")
	if i < 0 {
		return ""
	}
	var sb strings.Builder
	if f, err := os.CreateTemp("", "redmux-mutant-"+name+"-hang-*.log"); err == nil {
		_, _ = f.WriteString(text)
		_ = f.Close()
		fmt.Fprintf(&sb, " (whole output: %s)", f.Name())
	}
	type group struct {
		key string
		n   int
	}
	var groups []*group
	byKey := map[string]*group{}
	for _, blk := range strings.Split(text[i:], "\ngoroutine ")[1:] {
		lines := strings.Split(blk, "\n")
		state := lines[0]
		if a, b := strings.Index(state, "["), strings.Index(state, "]"); a >= 0 && b > a {
			state = state[a+1 : b]
			if c := strings.Index(state, ","); c >= 0 {
				state = state[:c] // "select, 9 minutes": the minutes differ
			}
		}
		var frames []string
		for _, ln := range lines[1:] {
			if strings.HasPrefix(ln, "\t") || strings.HasPrefix(ln, "created by ") || !strings.Contains(ln, "redmux/redmux/") {
				continue
			}
			fn := ln[strings.Index(ln, "redmux/redmux/")+len("redmux/redmux/"):]
			if p := strings.LastIndex(fn, "("); p > 0 {
				fn = fn[:p]
			}
			if len(frames) < 6 {
				frames = append(frames, fn)
			}
		}
		if len(frames) == 0 {
			continue // runtime and testing goroutines
		}
		key := "[" + state + "] " + strings.Join(frames, " < ")
		g := byKey[key]
		if g == nil {
			g = &group{key: key}
			byKey[key] = g
			groups = append(groups, g)
		}
		g.n++
	}
	sort.SliceStable(groups, func(a, b int) bool { return groups[a].n > groups[b].n })
	sb.WriteString("; goroutines in redmux code by state and frames (innermost first):")
	for _, g := range groups {
		if sb.Len() > 6000 {
			sb.WriteString("\n    ...")
			break
		}
		fmt.Fprintf(&sb, "\n    %d x %s", g.n, g.key)
	}
	return sb.String()
}

func tail(s string, n int) string {
	if len(s) > n {
		s = "..." + s[len(s)-n:]
	}
	return strings.TrimSpace(s)
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside the module (run from the repository)")
	}
	return filepath.Dir(gomod), nil
}

// listFiles lists the module's files: git's tracked and untracked
// (not ignored) files when git is there, else every file but .git.
func listFiles(root string) ([]string, error) {
	cmd := exec.Command("git", "ls-files", "-z", "-c", "-o", "--exclude-standard")
	cmd.Dir = root
	if out, err := cmd.Output(); err == nil {
		var files []string
		for _, f := range strings.Split(string(out), "\x00") {
			if f != "" {
				files = append(files, f)
			}
		}
		return files, nil
	}
	var files []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			rel, _ := filepath.Rel(root, p)
			files = append(files, rel)
		}
		return nil
	})
	return files, err
}

func copyFiles(root, dst string, files []string) error {
	for _, f := range files {
		src := filepath.Join(root, f)
		st, err := os.Lstat(src)
		if err != nil {
			if os.IsNotExist(err) {
				continue // deleted in the work tree
			}
			return err
		}
		if !st.Mode().IsRegular() {
			continue
		}
		d := filepath.Join(dst, f)
		if err := os.MkdirAll(filepath.Dir(d), 0o755); err != nil {
			return err
		}
		in, err := os.Open(src)
		if err != nil {
			return err
		}
		outF, err := os.OpenFile(d, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, st.Mode().Perm())
		if err != nil {
			in.Close()
			return err
		}
		_, err = io.Copy(outF, in)
		in.Close()
		if cerr := outF.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}
