package bench

import (
	"reflect"
	"strings"
	"testing"

	"github.com/redmux/redmux/bench/internal/report"
)

// jsonField resolves a column's JSON path in t ("*": the row's latency
// object), by the fields' JSON names.
func jsonField(t reflect.Type, path string) bool {
	for _, part := range strings.Split(path, ".") {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if part == "*" {
			t = reflect.TypeOf(report.Latency{})
			continue
		}
		if t.Kind() != reflect.Struct {
			return false
		}
		found := false
		for i := range t.NumField() {
			f := t.Field(i)
			if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name == part {
				t, found = f.Type, true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// Every column's JSON field exists in the JSON of its row (a renamed or
// mistyped field fails), and every column is rendered somewhere.
func TestColumnsNameTheirJSONFields(t *testing.T) {
	check := func(name string, row reflect.Type, heads, csvs, jsons []string) {
		for i, j := range jsons {
			if heads[i] == "" && csvs[i] == "" {
				t.Errorf("%s: column %d has neither a table header nor a CSV name", name, i)
			}
			if j != "" && !jsonField(row, j) {
				t.Errorf("%s: column %q/%q: no JSON field %q in %v", name, heads[i], csvs[i], j, row)
			}
		}
	}
	runs := goldenRuns()
	for _, rep := range runs {
		var h, c, j []string
		for _, col := range report.RunColumns(rep.Config) {
			h, c, j = append(h, col.Head), append(c, col.CSV), append(j, col.JSON)
		}
		check("run table", reflect.TypeOf(report.StrategyResult{}), h, c, j)
		h, c, j = nil, nil, nil
		for _, col := range report.MetricColumns(rep.Config) {
			h, c, j = append(h, col.Head), append(c, col.CSV), append(j, col.JSON)
		}
		check("summary.csv", reflect.TypeOf(report.StrategyResult{}), h, c, j)
	}
	var h, c, j []string
	for _, col := range report.StepColumns(goldenSweep().Config) {
		h, c, j = append(h, col.Head), append(c, col.CSV), append(j, col.JSON)
	}
	check("sweep steps", reflect.TypeOf(report.SweepStep{}), h, c, j)
	h, c, j = nil, nil, nil
	for _, col := range report.MergedColumns(mergePercentiles(&mergeConfig{}), true) {
		h, c, j = append(h, col.Head), append(c, col.CSV), append(j, col.JSON)
	}
	check("merged tags", reflect.TypeOf(report.MergedTag{}), h, c, j)
}
