// Package report is redmux-bench's report model: the JSON schema of the
// files a run, a sweep and a merge write (summary.json: Report, sweep.json:
// SweepReport, merged.json: MergeResult; schema.go), the one reader of
// them (Read, which tells the kind by content and decodes on demand), the
// latency summary every report shows (Summarize), and the verdicts on a
// sweep's steps (Judge, FindKnee, Breaches, Starved, the CPU cost fits).
//
// Internal: its API is bench's, not users'.
package report
