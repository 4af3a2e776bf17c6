// This file holds the row tables' model: one list of columns per kind of
// row (a strategy of a run, a strategy's metric, a sweep's step, a merged
// tag), each column naming its header in the text and Markdown table, its
// name in CSV, the JSON field it shows and how to format it, rendered as
// text, Markdown and CSV (benchstat's table.go: a column list, not
// parallel slices of headers and cells).

package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
)

// Column is one column of a row table of rows of type R.
type Column[R any] struct {
	// Head is the column's header in the text and Markdown table; "":
	// the column is CSV's only.
	Head string
	// CSV is its header in CSV; "": the table's only.
	CSV string
	// JSON is the JSON field the column shows, relative to the row's
	// object ("*" for the row's latency object, as in "*.p50_us"); "":
	// derived, or not in the JSON.
	JSON string
	// Cell is the table's cell (short units).
	Cell func(R) string
	// Raw is the CSV cell (full precision); nil: Cell.
	Raw func(R) string
}

// Columns is a row table's column list, in order; each rendering takes
// the columns it has a header for.
type Columns[R any] []Column[R]

// table renders rows as a text (or Markdown) table of the columns with a
// head.
func (cs Columns[R]) table(rows []R) *Table {
	var head []string
	for _, c := range cs {
		if c.Head != "" {
			head = append(head, c.Head)
		}
	}
	t := NewTable(head...)
	for _, r := range rows {
		cells := make([]string, 0, len(head))
		for _, c := range cs {
			if c.Head != "" {
				cells = append(cells, c.Cell(r))
			}
		}
		t.Row(cells...)
	}
	return t
}

// writeCSV writes rows as CSV, the columns with a CSV name, with a header
// line.
func (cs Columns[R]) writeCSV(w io.Writer, rows []R) error {
	cw := csv.NewWriter(w)
	var head []string
	for _, c := range cs {
		if c.CSV != "" {
			head = append(head, c.CSV)
		}
	}
	if err := cw.Write(head); err != nil {
		return err
	}
	for _, r := range rows {
		cells := make([]string, 0, len(head))
		for _, c := range cs {
			switch {
			case c.CSV == "":
			case c.Raw != nil:
				cells = append(cells, c.Raw(r))
			default:
				cells = append(cells, c.Cell(r))
			}
		}
		if err := cw.Write(cells); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// Cell formats shared by the column lists.

// csvFloat is a CSV number: full precision, no exponent.
func csvFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func fmtBool(b bool) string { return strconv.FormatBool(b) }

func fmtInt(v int64) string { return fmt.Sprint(v) }
