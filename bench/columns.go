// This file holds the row tables' model: one list of columns per kind of
// row (a strategy of a run, a strategy's metric, a sweep's step, a merged
// tag), each column naming its header in the text and Markdown table, its
// name in CSV, the JSON field it shows and how to format it, rendered as
// text, Markdown and CSV (benchstat's table.go: a column list, not
// parallel slices of headers and cells).

package bench

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
)

// column is one column of a row table of rows of type R.
type column[R any] struct {
	// head is the column's header in the text and Markdown table; "":
	// the column is CSV's only.
	head string
	// csv is its header in CSV; "": the table's only.
	csv string
	// json is the JSON field the column shows, relative to the row's
	// object ("*" for the row's latency object, as in "*.p50_us"); "":
	// derived, or not in the JSON.
	json string
	// cell is the table's cell (short units).
	cell func(R) string
	// raw is the CSV cell (full precision); nil: cell.
	raw func(R) string
}

// columns is a row table's column list, in order; each rendering takes
// the columns it has a header for.
type columns[R any] []column[R]

// table renders rows as a text (or Markdown) table of the columns with a
// head.
func (cs columns[R]) table(rows []R) *table {
	var head []string
	for _, c := range cs {
		if c.head != "" {
			head = append(head, c.head)
		}
	}
	t := newTable(head...)
	for _, r := range rows {
		cells := make([]string, 0, len(head))
		for _, c := range cs {
			if c.head != "" {
				cells = append(cells, c.cell(r))
			}
		}
		t.row(cells...)
	}
	return t
}

// writeCSV writes rows as CSV, the columns with a CSV name, with a header
// line.
func (cs columns[R]) writeCSV(w io.Writer, rows []R) error {
	cw := csv.NewWriter(w)
	var head []string
	for _, c := range cs {
		if c.csv != "" {
			head = append(head, c.csv)
		}
	}
	if err := cw.Write(head); err != nil {
		return err
	}
	for _, r := range rows {
		cells := make([]string, 0, len(head))
		for _, c := range cs {
			switch {
			case c.csv == "":
			case c.raw != nil:
				cells = append(cells, c.raw(r))
			default:
				cells = append(cells, c.cell(r))
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
