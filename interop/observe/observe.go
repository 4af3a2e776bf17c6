package observe

import (
	"context"
	"errors"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/redmux/redmux/redlock"
)

// ops are the operations an event's duration is recorded for.
var ops = []redlock.Op{redlock.OpAcquire, redlock.OpExtend, redlock.OpKeepAlive, redlock.OpRelease}

const maxOp = int(redlock.OpKeepAliveEnd) + 1

func outcome(err error) int {
	if err != nil {
		return 1
	}
	return 0
}

var outcomes = [2]string{"ok", "error"}

// Prometheus is a redlock.Observer that records into Prometheus metrics.
type Prometheus struct {
	dur       [maxOp][2]prometheus.Observer
	lost      [maxOp]prometheus.Counter
	attempts  prometheus.Counter
	contended prometheus.Counter
	nodeErrs  *prometheus.CounterVec
}

// NewPrometheus registers the metrics with reg (prefixed with namespace +
// "_" when namespace is not empty) and returns the observer. Buckets are
// for durations from 100 µs to 10 s.
func NewPrometheus(reg prometheus.Registerer, namespace string) (*Prometheus, error) {
	dur := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "redlock_operation_duration_seconds",
		Help:    "Duration of redlock operations (acquire: every attempt and wait).",
		Buckets: prometheus.ExponentialBuckets(0.0001, 2.5, 11),
	}, []string{"op", "outcome"})
	lost := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "redlock_locks_lost_total",
		Help: "Operations that found the lock lost or expired.",
	}, []string{"op"})
	p := &Prometheus{
		attempts: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "redlock_acquire_attempts_total", Help: "Acquisition attempts made.",
		}),
		contended: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "redlock_acquire_contended_total", Help: "Acquisitions that met another holder.",
		}),
		nodeErrs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "redlock_node_errors_total", Help: "Node failures within operations.",
		}, []string{"node", "op"}),
	}
	for _, c := range []prometheus.Collector{dur, lost, p.attempts, p.contended, p.nodeErrs} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for _, op := range ops {
		for o, name := range outcomes {
			p.dur[op][o] = dur.WithLabelValues(op.String(), name)
		}
		p.lost[op] = lost.WithLabelValues(op.String())
	}
	p.lost[redlock.OpKeepAliveEnd] = lost.WithLabelValues(redlock.OpKeepAliveEnd.String())
	return p, nil
}

// Observe implements redlock.Observer.
func (p *Prometheus) Observe(e redlock.Event) {
	if e.Op == redlock.OpNodeError {
		p.nodeErrs.WithLabelValues(e.Addr, e.In.String()).Inc()
		return
	}
	if e.Op == redlock.OpKeepAliveEnd { // a kept-alive lock's end: counted once if lost
		if e.Lost() {
			p.lost[e.Op].Inc()
		}
		return
	}
	if int(e.Op) >= maxOp || p.dur[e.Op][0] == nil {
		return
	}
	p.dur[e.Op][outcome(e.Err)].Observe(e.Duration.Seconds())
	if e.Op == redlock.OpAcquire {
		p.attempts.Add(float64(e.Attempts))
		if e.Contended {
			p.contended.Inc()
		}
	}
	if e.Lost() {
		p.lost[e.Op].Inc()
	}
}

// OTel is a redlock.Observer that records into OpenTelemetry instruments.
type OTel struct {
	dur       metric.Float64Histogram
	attempts  metric.Int64Counter
	contended metric.Int64Counter
	lost      metric.Int64Counter
	nodeErrs  metric.Int64Counter
	durSet    [maxOp][2]metric.RecordOption
	opSet     [maxOp]metric.AddOption
	nodeSets  sync.Map // node error attribute sets by (addr, op)
}

type nodeKey struct {
	addr string
	op   redlock.Op
}

// NewOTel creates the instruments on meter and returns the observer.
func NewOTel(meter metric.Meter) (*OTel, error) {
	o := &OTel{}
	var err, e error
	o.dur, e = meter.Float64Histogram("redlock.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of redlock operations (acquire: every attempt and wait)."))
	err = errors.Join(err, e)
	o.attempts, e = meter.Int64Counter("redlock.acquire.attempts", metric.WithDescription("Acquisition attempts made."))
	err = errors.Join(err, e)
	o.contended, e = meter.Int64Counter("redlock.acquire.contended", metric.WithDescription("Acquisitions that met another holder."))
	err = errors.Join(err, e)
	o.lost, e = meter.Int64Counter("redlock.locks.lost", metric.WithDescription("Operations that found the lock lost or expired."))
	err = errors.Join(err, e)
	o.nodeErrs, e = meter.Int64Counter("redlock.node.errors", metric.WithDescription("Node failures within operations."))
	err = errors.Join(err, e)
	if err != nil {
		return nil, err
	}
	for _, op := range ops {
		for oc, name := range outcomes {
			o.durSet[op][oc] = metric.WithAttributeSet(attribute.NewSet(attribute.String("op", op.String()), attribute.String("outcome", name)))
		}
		o.opSet[op] = metric.WithAttributeSet(attribute.NewSet(attribute.String("op", op.String())))
	}
	o.opSet[redlock.OpKeepAliveEnd] = metric.WithAttributeSet(attribute.NewSet(attribute.String("op", redlock.OpKeepAliveEnd.String())))
	return o, nil
}

// Observe implements redlock.Observer.
func (o *OTel) Observe(e redlock.Event) {
	ctx := context.Background()
	if e.Op == redlock.OpNodeError {
		k := nodeKey{e.Addr, e.In}
		set, ok := o.nodeSets.Load(k)
		if !ok {
			set, _ = o.nodeSets.LoadOrStore(k, metric.WithAttributeSet(attribute.NewSet(
				attribute.String("node", e.Addr), attribute.String("op", e.In.String()))))
		}
		o.nodeErrs.Add(ctx, 1, set.(metric.AddOption))
		return
	}
	if e.Op == redlock.OpKeepAliveEnd { // a kept-alive lock's end: counted once if lost
		if e.Lost() {
			o.lost.Add(ctx, 1, o.opSet[e.Op])
		}
		return
	}
	if int(e.Op) >= maxOp || o.durSet[e.Op][0] == nil {
		return
	}
	o.dur.Record(ctx, e.Duration.Seconds(), o.durSet[e.Op][outcome(e.Err)])
	if e.Op == redlock.OpAcquire {
		o.attempts.Add(ctx, int64(e.Attempts))
		if e.Contended {
			o.contended.Add(ctx, 1)
		}
	}
	if e.Lost() {
		o.lost.Add(ctx, 1, o.opSet[e.Op])
	}
}
