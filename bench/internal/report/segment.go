package report

import "fmt"

// Describe is the segment in words, for the report and the run's first
// line.
func (s *SegmentInfo) Describe(rate float64, workers, keys int) string {
	out := fmt.Sprintf("segment %d/%d of one run", s.Index, s.Count)
	if s.TotalRate > 0 {
		out += fmt.Sprintf(": rate %.6g of %.6g ops/s", rate, s.TotalRate)
	} else {
		out += ":"
	}
	out += fmt.Sprintf(", workers %d of %d", workers, s.TotalWorkers)
	if s.KeysSplit {
		out += fmt.Sprintf(", keys %d..%d of %d", s.KeyFirst, s.KeyFirst+keys-1, s.TotalKeys)
	} else {
		out += fmt.Sprintf(", all %d keys (shared by every segment)", s.TotalKeys)
	}
	return out
}
