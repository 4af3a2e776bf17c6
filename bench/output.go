// This file holds the one artifact writer of runs and sweeps.

package bench

import (
	"errors"
	"io"
	"os"
	"path/filepath"

	"github.com/redmux/redmux/bench/internal/report"
	"github.com/redmux/redmux/bench/load"
)

// writeFile creates path and writes it with write.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// writeBytes is a writer of b.
func writeBytes(b []byte) func(io.Writer) error {
	return func(w io.Writer) error { _, err := w.Write(b); return err }
}

// writeTo writes to path, or to stdout when path is "-".
func writeTo(path string, stdout io.Writer, write func(io.Writer) error) error {
	if path == "-" {
		return write(stdout)
	}
	return writeFile(path, write)
}

// artifact is one file of the -out directory: its name and its writer.
type artifact struct {
	name  string
	write func(io.Writer) error
}

// artifacts are the outputs of a run or of a sweep: the -json and -csv
// writers (a file, or stdout for "-"), the -hlog interval log (nil: the
// command has no -hlog) and the -out directory's files, in writing order.
type artifacts struct {
	json, csv func(io.Writer) error
	hlog      func(io.Writer) error
	files     []artifact
}

// write writes the outputs cfg asks for; Run and runSweep both write
// theirs with it. The -out directory comes first (an -hlog inside it needs
// it), and a file that fails does not keep the others from being written:
// the error says which failed.
func (a *artifacts) write(cfg *Config, stdout io.Writer) error {
	var errs []error
	if cfg.Out != "" {
		if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
			errs = append(errs, err)
		} else {
			for _, f := range a.files {
				if err := writeFile(filepath.Join(cfg.Out, f.name), f.write); err != nil {
					errs = append(errs, err)
					break
				}
			}
		}
	}
	if cfg.JSON != "" {
		if err := writeTo(cfg.JSON, stdout, a.json); err != nil {
			errs = append(errs, err)
		}
	}
	if cfg.CSV != "" {
		if err := writeTo(cfg.CSV, stdout, a.csv); err != nil {
			errs = append(errs, err)
		}
	}
	if cfg.Hlog != "" && a.hlog != nil {
		if err := writeFile(cfg.Hlog, a.hlog); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// writeOutputs writes a run's outputs: -json, -csv, -hlog and the -out
// directory (report.md, summary.json and .csv, bench.hlog, the plots).
func writeOutputs(cfg *Config, rep *report.Report, stdout io.Writer) error {
	jsonW := func(w io.Writer) error { return report.WriteJSON(w, rep) }
	csvW := func(w io.Writer) error { return report.WriteCSV(w, rep) }
	a := &artifacts{json: jsonW, csv: csvW, hlog: writeBytes(rep.Hlog), files: []artifact{
		{report.FileSummary, jsonW},
		{report.FileCSV, csvW},
		{report.FileHlog, writeBytes(rep.Hlog)},
		{report.FilePlot, func(w io.Writer) error { return report.WritePlot(w, rep, load.MetricAcquireRelease) }},
		{report.FilePlotAcquire, func(w io.Writer) error { return report.WritePlot(w, rep, load.MetricAcquire) }},
		{report.FileReport, func(w io.Writer) error { return report.WriteMarkdown(w, rep) }},
	}}
	return a.write(cfg, stdout)
}

// writeSweepOutputs writes a sweep's outputs: -json, -csv and the -out
// directory (sweep.md, sweep.json and .csv, sweep.hlog, sweep.svg). A
// sweep has no -hlog (its log is in -out).
func writeSweepOutputs(cfg *Config, rep *report.SweepReport, stdout io.Writer) error {
	jsonW := func(w io.Writer) error { return report.WriteSweepJSON(w, rep) }
	csvW := func(w io.Writer) error { return report.WriteSweepCSV(w, rep) }
	a := &artifacts{json: jsonW, csv: csvW, files: []artifact{
		{report.FileSweepJSON, jsonW},
		{report.FileSweepCSV, csvW},
		{report.FileSweepHlog, writeBytes(rep.Hlog)},
		{report.FileSweepPlot, func(w io.Writer) error { return report.WriteSweepPlot(w, rep) }},
		{report.FileSweepReport, func(w io.Writer) error { return report.WriteSweepMarkdown(w, rep) }},
	}}
	return a.write(cfg, stdout)
}
