// This file holds the JSON schema of redmux-bench's outputs, every type with
// JSON tags: summary.json (Report), sweep.json (SweepReport) and merged.json
// (MergeResult), so that a field is added in one place. The schema is fixed
// (docs/ARCHITECTURE.md, "Fixed and open"): fields are added, never renamed.
// Read (read.go) decodes any of them.

package report

import (
	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/redmux/redmux/bench/load"
)

// Report is the whole run's outcome: the -json object and what report.md
// is written from.
type Report struct {
	Strategies []*StrategyResult `json:"strategies"`
	Config     ReportConfig      `json:"config"`
	Env        Env               `json:"env"`
	// Interrupted: the run was stopped (SIGINT) before it finished; the
	// report covers the strategies measured until then.
	Interrupted bool `json:"interrupted,omitempty"`

	// Hlog is the run's interval log (bench.hlog), not in the JSON.
	Hlog []byte `json:"-"`
}

// ReportConfig is the run's configuration as written in reports (never the
// password, only whether one was set).
type ReportConfig struct {
	Title        string   `json:"title,omitempty"`
	Command      string   `json:"command"`
	Target       string   `json:"target"`
	TargetKind   string   `json:"target_kind"` // embedded, real-local, nodes
	Nodes        []string `json:"nodes"`
	TLS          bool     `json:"tls,omitempty"` // -tls: every node over TLS
	Strategies   []string `json:"strategies"`
	Workers      int      `json:"workers"`
	MuxConns     int      `json:"mux_conns,omitempty"`      // 0: mux's default
	DirectWaitMs float64  `json:"direct_wait_ms,omitempty"` // -direct-wait; 0: off
	MuxTransport string   `json:"mux_transport,omitempty"`  // -transport; empty: auto, mux's default
	DurationS    float64  `json:"duration_s,omitempty"`
	Ops          int64    `json:"ops,omitempty"`
	WarmupS      float64  `json:"warmup_s"`
	Keys         int      `json:"keys"`
	TTLMs        int64    `json:"ttl_ms"`
	TimeoutMs    float64  `json:"node_timeout_ms"`
	Rate         float64  `json:"rate,omitempty"`
	Loop         string   `json:"loop"` // closed or open
	Workload     string   `json:"workload"`
	Hold         string   `json:"hold,omitempty"`
	HoldMeanMs   float64  `json:"hold_mean_ms,omitempty"`
	KeysDist     string   `json:"keys_dist"`
	User         string   `json:"user,omitempty"`
	PasswordSet  bool     `json:"password_set"`
	DB           int      `json:"db,omitempty"`
	LatencyMs    float64  `json:"latency_ms,omitempty"`
	Faults       []string `json:"faults,omitempty"`
	DriftFactor  float64  `json:"drift_factor"`
	DriftMs      float64  `json:"drift_fixed_ms"`
	// NodeCap is -node-cap: commands/s each embedded node serves.
	NodeCap float64 `json:"node_cap,omitempty"`
	// CapacityRate is the extra target rate of the capacity section.
	CapacityRate float64 `json:"capacity_rate,omitempty"`
	// StartAt is -start-at (RFC 3339).
	StartAt string `json:"start_at,omitempty"`
	// Percentiles are the -percentiles list (empty: the defaults).
	Percentiles []float64 `json:"percentiles,omitempty"`
	// Segment is -segment i/n: this process ran one share of a run spread
	// over n processes; workers, rate and keys above are its share, the
	// whole run's are here.
	Segment *SegmentInfo `json:"segment,omitempty"`
}

// SegmentInfo is -segment i/n as reports record it.
type SegmentInfo struct {
	Index int `json:"index"` // i, 0-based
	Count int `json:"count"` // n
	// The whole run's -rate (0: closed loop), -c and -keys.
	TotalRate    float64 `json:"total_rate,omitempty"`
	TotalWorkers int     `json:"total_workers"`
	TotalKeys    int     `json:"total_keys"`
	// KeysSplit: this segment's keys are the range KeyFirst ..
	// KeyFirst+keys-1 of the whole key space; false: every segment uses
	// the whole key space (contended workload, uniform or zipf popularity).
	KeysSplit bool `json:"keys_split"`
	KeyFirst  int  `json:"key_first"`
}

// Env describes the machine and build.
type Env struct {
	Time       string `json:"time"`
	GoVersion  string `json:"go_version"`
	OS         string `json:"os"`
	Arch       string `json:"arch"`
	CPU        string `json:"cpu,omitempty"`
	NumCPU     int    `json:"num_cpu"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	// Revision is Build.Revision's first 12 characters (no "+dirty": see
	// Build.Modified); empty when unknown.
	Revision string `json:"revision,omitempty"`
	// Build names the code that ran: the -version line, the module version,
	// the full revision and where it came from (bench's versionString documents how).
	Build     Build  `json:"build"`
	Server    string `json:"server,omitempty"`
	ServerCPU string `json:"server_cpu_source"`
	// LoadAvg is /proc/loadavg's 1-minute load average when the run
	// started and when it ended (Linux; how busy a shared machine was).
	LoadAvgStart string `json:"load_avg_start,omitempty"`
	LoadAvgEnd   string `json:"load_avg_end,omitempty"`
}

// Build is the code a redmux-bench binary was built from (Env.Build).
type Build struct {
	// Version is the line -version prints.
	Version string `json:"version"`
	// Module is the main module's version: a tag (go install ...@v0.3.0), a
	// pseudo-version (go build in a checkout, Go 1.24+) or "(devel)".
	Module string `json:"module_version"`
	// Revision is the full VCS revision; empty when unknown.
	Revision string `json:"revision,omitempty"`
	// RevisionTime is the revision's commit time (RFC 3339, UTC).
	RevisionTime string `json:"revision_time,omitempty"`
	// Modified: the working tree had changes (untracked files included)
	// when the binary was built.
	Modified bool `json:"modified,omitempty"`
	// RevisionSource is where Revision came from: "build info", "git at
	// run time (go run)", "module version" or "unknown".
	RevisionSource string `json:"revision_source"`
}

// StrategyResult is one strategy's measured outcome (the JSON schema's
// "strategies" element).
type StrategyResult struct {
	Name      string  `json:"name"`
	Ops       int64   `json:"ops"`         // acquire attempts: acquired + not_acquired + failed at acquire
	OpsPerSec float64 `json:"ops_per_sec"` // achieved rate of attempts
	DurationS float64 `json:"duration_s"`
	// Open loop only: the target rate, whether the run kept up with it, and
	// why not.
	TargetRate float64 `json:"target_rate,omitempty"`
	Saturated  bool    `json:"saturated,omitempty"`
	Saturation string  `json:"saturation,omitempty"`
	// Backlog is the operations that were due by the end of an open-loop
	// run but never started (the run stops at -d).
	Backlog int64 `json:"backlog,omitempty"`
	// Interrupted: the run was stopped (SIGINT) before its end; the figures
	// cover what was measured.
	Interrupted bool `json:"interrupted,omitempty"`
	// With -start-at: when the measured window started, and how late the
	// warm-up started after its slot (set-up overran it).
	StartedAt   string  `json:"started_at,omitempty"`
	StartLateMs float64 `json:"start_late_ms,omitempty"`

	Acquire        Latency          `json:"acquire"`
	Release        Latency          `json:"release"`
	AcquireRelease Latency          `json:"acquire_release"`
	NotAcquiredLat Latency          `json:"not_acquired_latency"`
	FailedLat      Latency          `json:"failed_latency"`
	Errors         map[string]int64 `json:"errors"`
	NodeErrors     map[string]int64 `json:"node_errors"`
	// NodeOutages are the nodes that failed within operations, each with
	// its error count and the times of its first and last error (the
	// nodes that had none left out).
	NodeOutages []NodeOutage `json:"node_outages,omitempty"`
	Acquired    int64        `json:"acquired"`
	// AcquiredPerSec is acquisitions (not attempts) per second: under
	// contention, the lock's hand-offs per second.
	AcquiredPerSec float64 `json:"acquired_per_sec"`
	NotAcquired    int64   `json:"not_acquired"`
	// Failed is the operations that ended in an error (at acquire, or at
	// release after the lock was acquired: ReleaseFailed of them).
	Failed        int64 `json:"failed"`
	ReleaseFailed int64 `json:"release_failed"`
	// AcquiredReleased is Acquired less ReleaseFailed: the operations that
	// took the lock and did not fail at release, so that acquired_released
	// + not_acquired + failed = ops (an operation whose release failed is
	// in failed only; acquired counts it too, as an acquisition).
	AcquiredReleased int64   `json:"acquired_released"`
	Extended         int64   `json:"extended,omitempty"`
	NotExtended      int64   `json:"not_extended,omitempty"`
	AllocsPerOp      float64 `json:"allocs_per_op"`
	BytesPerOp       float64 `json:"bytes_per_op"`
	// CPUUsPerOp is the client's CPU time per operation: the process's
	// (ProcessCPUUsPerOp, getrusage over the measured window) less the
	// load generator's own (HarnessCPUUsPerOp), so it is the strategy's
	// (the lock library's and its worker's). HarnessCPUUsPerOp is the
	// collector's measured CPU time plus the load loop's calibrated cost
	// per operation (clock reads, recording: bench/load/harness.go); a
	// lower bound, so CPUUsPerOp is an upper bound. Reports written before
	// the harness was measured have no harness figure and a CPUUsPerOp
	// that includes it.
	CPUUsPerOp        float64     `json:"cpu_us_per_op"`
	HarnessCPUUsPerOp float64     `json:"harness_cpu_us_per_op"`
	ProcessCPUUsPerOp float64     `json:"process_cpu_us_per_op"`
	Server            *ServerCost `json:"server,omitempty"`
	// WorkerBusyShare is the share of the measured window the workers
	// spent in operations (from each operation's actual start to its end,
	// holds included): near 1, every worker was busy all the time, so the
	// workers, not the target, limited the rate.
	WorkerBusyShare float64 `json:"worker_busy_share"`
	// MeanServiceUs is the mean time from an operation's actual start to
	// its end (its latency less any wait for a free worker).
	MeanServiceUs float64 `json:"mean_service_us"`

	// Hists are the measured histograms (load.Metrics order), not in the JSON.
	Hists load.Hists `json:"-"`
}

// Latency is a latency distribution summary in microseconds. Percentiles
// follow HdrHistogram's convention (see load.ValueAtPercentile).
type Latency struct {
	Count   int64   `json:"count"`
	MinUs   float64 `json:"min_us"`
	MeanUs  float64 `json:"mean_us"`
	P50Us   float64 `json:"p50_us"`
	P90Us   float64 `json:"p90_us"`
	P99Us   float64 `json:"p99_us"`
	P999Us  float64 `json:"p999_us"`
	P9999Us float64 `json:"p9999_us"`
	MaxUs   float64 `json:"max_us"`
	// Percentiles are the run's chosen percentiles (-percentiles), in order.
	Percentiles []Percentile `json:"percentiles,omitempty"`
}

// Percentile is one chosen percentile's value.
type Percentile struct {
	P  float64 `json:"p"`
	Us float64 `json:"us"`
}

// ServerCost is the server side of one strategy's run.
type ServerCost struct {
	// SetUsecPerCall and EvalshaUsecPerCall are INFO commandstats
	// usec/calls over the run, over every node that answered INFO (command
	// execution only: no network I/O, no parsing).
	SetUsecPerCall     float64 `json:"set_usec_per_call"`
	EvalshaUsecPerCall float64 `json:"evalsha_usec_per_call"`
	SetCalls           int64   `json:"set_calls"`
	EvalshaCalls       int64   `json:"evalsha_calls"`
	// NodesReporting is how many nodes answered INFO before and after.
	NodesReporting int `json:"nodes_reporting"`
	// NotRead says why INFO commandstats was not read (NodesReporting 0):
	// the calls and usec/call above are then not measured, not zero.
	NotRead string `json:"commandstats_not_read,omitempty"`
	// CPUUsPerOpPerNode is the server processes' whole CPU time (syscalls
	// included) per lock operation, per node (the mean over nodes); 0 when
	// unknown. MaxNodeCPUUsPerOp is the busiest node's. From INFO CPU
	// (used_cpu_user+used_cpu_sys) when every node reports it, local or
	// remote (CPUSource "info"), else from the server processes' /proc
	// stat ("process"; an embedded cluster's nodes share one process, so
	// its figure is the mean).
	CPUUsPerOpPerNode float64 `json:"cpu_us_per_op_per_node,omitempty"`
	MaxNodeCPUUsPerOp float64 `json:"max_node_cpu_us_per_op,omitempty"`
	CPUSource         string  `json:"cpu_source,omitempty"`
}

// SweepReport is a sweep's outcome (sweep.json).
type SweepReport struct {
	// SLO is the one objective every strategy was judged by; SLOSource
	// says where it came from (-slo, or how it was derived).
	SLO         string           `json:"slo"`
	SLOSource   string           `json:"slo_source"`
	Strategies  []*SweepStrategy `json:"strategies"`
	Config      ReportConfig     `json:"config"`
	Env         Env              `json:"env"`
	Interrupted bool             `json:"interrupted,omitempty"`

	// Hlog is the sweep's interval log (sweep.hlog), not in the JSON.
	Hlog []byte `json:"-"`
}

// SweepStrategy is one strategy's sweep.
type SweepStrategy struct {
	Name string `json:"name"`
	// ProbeOpsPerSec is the closed-loop rate the steps were spaced up to
	// (0 with -rates).
	ProbeOpsPerSec float64 `json:"probe_ops_per_sec,omitempty"`
	// ProbeWorkerBusy is the probe's share of worker time in operations.
	ProbeWorkerBusy float64 `json:"probe_worker_busy_share,omitempty"`
	// SLO is the objective applied: -slo, or the automatic one, the same
	// for every strategy of the sweep (SweepReport.SLOSource).
	SLO         string       `json:"slo"`
	SLOPct      float64      `json:"slo_percentile"`
	SLOBudgetUs float64      `json:"slo_budget_us"`
	Steps       []*SweepStep `json:"steps"`
	// Knee is the highest-rate step that held with every lighter step
	// holding too (nil: none held); KneeRate its target rate.
	Knee     *SweepStep `json:"knee,omitempty"`
	KneeRate float64    `json:"knee_rate"`
	// Saturated: the sweep reached a step past capacity (else the capacity
	// is above the highest rate tried).
	Saturated bool `json:"reached_saturation"`
	// Bound names what most likely limited the knee.
	Bound string `json:"bound,omitempty"`
	// ClientCPUFit and ServerCPUFit are the client's and the busiest
	// node's CPU fitted over the steps that held (the Provisioning
	// section's costs; nil: no step held, or no figure).
	ClientCPUFit *CostFit `json:"client_cpu_fit,omitempty"`
	// Starved says how this machine's CPU was starved by other work at the
	// knee or the first step past it (load average, other processes,
	// steal; empty: it was not): the knee and the costs are then this
	// machine's, and the plan's figures upper bounds.
	Starved      string   `json:"cpu_starved,omitempty"`
	ServerCPUFit *CostFit `json:"server_cpu_fit,omitempty"`
	Interrupted  bool     `json:"interrupted,omitempty"`
}

// SweepStep is one open-loop step of a sweep. Latencies are of every
// operation, from its intended start to its end (acquire and release when
// acquired; refused and failed operations to their outcome).
type SweepStep struct {
	TargetRate  float64 `json:"target_rate"`
	OpsPerSec   float64 `json:"ops_per_sec"`
	Ops         int64   `json:"ops"`
	DurationS   float64 `json:"duration_s"`
	Saturated   bool    `json:"saturated"`
	Saturation  string  `json:"saturation,omitempty"`
	Failed      int64   `json:"failed"`
	FailedShare float64 `json:"failed_share"`
	Latency     Latency `json:"latency"`
	// SLOUs is the objective's percentile of this step.
	SLOUs float64 `json:"slo_us"`
	Held  bool    `json:"held"`
	// Why says why the step did not hold.
	Why string `json:"why,omitempty"`
	// Refinement: a bisection step between the coarse ones.
	Refinement bool `json:"refinement,omitempty"`
	// Repeated: this step did not hold (latency, not keeping up, or
	// failures; the lightest step also when it failed or did not keep up
	// before the objective was known) and was run again at the same rate;
	// the repeat's verdict stands (a single latency spike or paused node on
	// a shared machine does not make a knee, an overload repeats). Repeated
	// steps are listed but take no part in the knee.
	Repeated bool `json:"repeated,omitempty"`
	// SetAside: this step did not hold (its re-run included) but the next
	// heavier step held, so it is a lone failure, not the knee: the
	// strategy is judged by the steps that held above it.
	SetAside bool `json:"set_aside,omitempty"`
	// ClientCPUUsPerOp is this process's CPU per operation;
	// ServerCPUUsPerOpPerNode the server processes' (0: unknown).
	ClientCPUUsPerOp        float64 `json:"client_cpu_us_per_op"`
	ServerCPUUsPerOpPerNode float64 `json:"server_cpu_us_per_op_per_node,omitempty"`
	// ServerCPUMaxNodeUsPerOp is the busiest node's CPU per operation;
	// ServerCPUSource "info" (INFO CPU of every node) or "process".
	ServerCPUMaxNodeUsPerOp float64          `json:"server_cpu_max_node_us_per_op,omitempty"`
	ServerCPUSource         string           `json:"server_cpu_source,omitempty"`
	Errors                  map[string]int64 `json:"errors,omitempty"`
	NodeErrors              map[string]int64 `json:"node_errors,omitempty"`
	NodeOutages             []NodeOutage     `json:"node_outages,omitempty"`
	// Interrupted: the sweep was stopped (SIGINT) during this step; it
	// does not hold and takes no part in the knee.
	Interrupted bool `json:"interrupted,omitempty"`
	// Tag is this run's interval-log tag prefix in sweep.hlog
	// ("<strategy>.r<rate>", ".run2" added for a step run again).
	Tag string `json:"hlog_tag,omitempty"`
	// WorkerBusyShare is the share of the step's time the workers spent
	// in operations (1: every worker busy all the time: the workers, not
	// the target, were the limit).
	WorkerBusyShare float64 `json:"worker_busy_share"`
	// MeanServiceUs is the mean time from an operation's actual start to
	// its end: -c over it is the rate the workers can carry.
	MeanServiceUs float64 `json:"mean_service_us"`
	// LoadAvg is the machine's 1-minute load average at the step's end;
	// MachineBusyCores the machine's busy CPUs over the step (/proc/stat,
	// every process), OtherCores those less this process's and local
	// servers' own, StealShare the share of CPU time a hypervisor stole
	// (Linux; 0: not measured). They tell a CPU-starved machine apart.
	LoadAvg          float64 `json:"load_avg,omitempty"`
	MachineBusyCores float64 `json:"machine_busy_cores,omitempty"`
	OtherCores       float64 `json:"other_cores,omitempty"`
	StealShare       float64 `json:"steal_share,omitempty"`

	// Hist is the distribution summarised above, not in the JSON.
	Hist *hdr.Histogram `json:"-"`
}

// CostFit is a CPU cost fitted over a strategy's steps that held: cores
// used = FixedCores + UsPerOp x rate / 1e6 (least squares over the steps'
// achieved rates; FixedCores at least 0), so that the cost per operation
// at a rate is UsPerOp + FixedCores x 1e6 / rate (it falls as the rate
// rises: fixed costs and batches shared by more operations).
type CostFit struct {
	FixedCores float64 `json:"fixed_cores"`
	UsPerOp    float64 `json:"us_per_op"`
	// Steps is how many steps the fit is over; MinRate and MaxRate their
	// achieved rates.
	Steps   int     `json:"steps"`
	MinRate float64 `json:"min_rate"`
	MaxRate float64 `json:"max_rate"`
}

// MergeResult is redmux-bench merge's outcome (merged.json).
type MergeResult struct {
	Files     []string     `json:"files"`
	Intervals int          `json:"intervals"` // kept
	Skipped   int          `json:"skipped"`   // left out by -start, -end, -tag
	Start     string       `json:"start,omitempty"`
	End       string       `json:"end,omitempty"`
	Filters   string       `json:"filters,omitempty"`
	Tags      []*MergedTag `json:"tags"`
	// Segments: the files are segments of one run (-segment i/n).
	Segments *MergedSegments `json:"segments,omitempty"`
	// Warnings: what makes the merged figures doubtful (a missing
	// segment, segments of different runs).
	Warnings []string `json:"warnings,omitempty"`

	// Kept are the intervals kept, not in the JSON.
	Kept []*hdr.Histogram `json:"-"`
}

// MergedSegments describes merged files that are segments of one run.
type MergedSegments struct {
	Count   int    `json:"count"`             // n of -segment i/n
	Present []int  `json:"present"`           // the segments merged (i), ascending
	Missing []int  `json:"missing,omitempty"` // the segments not given
	StartAt string `json:"start_at,omitempty"`
	// TotalRate is the whole run's -rate (open loop; 0: closed loop).
	TotalRate float64 `json:"total_rate,omitempty"`
}

// MergedTag is one tag's merged distribution.
type MergedTag struct {
	Tag       string  `json:"tag"`
	Intervals int     `json:"intervals"`
	Files     int     `json:"files"` // how many files contributed
	Start     string  `json:"start"` // earliest kept interval start (RFC 3339)
	End       string  `json:"end"`   // latest kept interval end
	PerSec    float64 `json:"per_sec"`
	// SumPerSec is the sum over the files of each file's count over its
	// own span: the whole run's rate when the files are segments of one
	// run (-segment) or machines that ran together, whether or not their
	// windows line up to the millisecond (PerSec divides by the union of
	// the spans).
	SumPerSec float64 `json:"sum_per_sec"`
	Latency   Latency `json:"latency"`

	// Hist is the distribution summarised above, not in the JSON.
	Hist *hdr.Histogram `json:"-"`
}
