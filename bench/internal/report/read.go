package report

import (
	"encoding/json"
	"fmt"
	"os"
)

// Kind is which report a file holds, told by its content.
type Kind int

const (
	// KindUnknown: a JSON document that is none of the reports below (no
	// strategies, no tags).
	KindUnknown Kind = iota
	// KindRun: a run's summary.json (Report).
	KindRun
	// KindSweep: a sweep's sweep.json (SweepReport): its first strategy
	// has steps.
	KindSweep
	// KindMerged: merge's merged.json (MergeResult): tags, no strategies.
	KindMerged
)

// File is one report file as read: its kind, and the document, decoded
// into the kind's type on demand (Run, Sweep, Merged) or kept generic (Doc,
// which tells a field that is absent from one that is zero).
type File struct {
	Path string
	Kind Kind
	Doc  any
	b    []byte
}

// FormatError is a file that is not JSON.
type FormatError struct {
	Path string
	Err  error
}

func (e *FormatError) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *FormatError) Unwrap() error { return e.Err }

// Read reads a report file that redmux-bench wrote (summary.json,
// sweep.json, merged.json) and tells which it is. An error reading the file
// is returned as it is; a file that is not JSON gives a *FormatError. A
// JSON document of another shape is KindUnknown, not an error: the caller
// says what it expected.
func Read(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f := &File{Path: path, b: b}
	if err := json.Unmarshal(b, &f.Doc); err != nil {
		return nil, &FormatError{Path: path, Err: err}
	}
	var probe struct {
		Strategies []map[string]json.RawMessage `json:"strategies"`
	}
	if err := json.Unmarshal(b, &probe); err == nil && len(probe.Strategies) > 0 {
		f.Kind = KindRun
		if _, ok := probe.Strategies[0]["steps"]; ok {
			f.Kind = KindSweep
		}
	} else if m, ok := f.Doc.(map[string]any); ok && err == nil {
		if _, ok := m["tags"]; ok {
			f.Kind = KindMerged
		}
	}
	return f, nil
}

// Run decodes the file as a run's report, whatever its Kind.
func (f *File) Run() (*Report, error) {
	var rep Report
	return &rep, f.decode(&rep)
}

// Sweep decodes the file as a sweep's report, whatever its Kind.
func (f *File) Sweep() (*SweepReport, error) {
	var rep SweepReport
	return &rep, f.decode(&rep)
}

// Merged decodes the file as merge's report, whatever its Kind.
func (f *File) Merged() (*MergeResult, error) {
	var rep MergeResult
	return &rep, f.decode(&rep)
}

func (f *File) decode(v any) error {
	if err := json.Unmarshal(f.b, v); err != nil {
		return fmt.Errorf("%s: %w", f.Path, err)
	}
	return nil
}
