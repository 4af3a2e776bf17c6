// This file holds every flag.Value of the command lines (run, sweep, merge
// and compare) and the helpers that register or print them.

package bench

import (
	"errors"
	"flag"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redmux/redmux/bench/internal/report"
	"github.com/redmux/redmux/bench/load"
	"github.com/redmux/redmux/mux"
)

// durationFlag is a time.Duration flag whose error for a bare number says
// that a unit is needed.
type durationFlag struct{ d *time.Duration }

func (f durationFlag) String() string {
	if f.d == nil {
		return "0s"
	}
	return f.d.String()
}

func (f durationFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		if _, nerr := strconv.ParseFloat(s, 64); nerr == nil {
			return fmt.Errorf("a duration needs a unit: %ss or %sms, say", s, s)
		}
		return errors.New("not a duration (e.g. 5s, 500ms, 1m)")
	}
	*f.d = d
	return nil
}

func durationVar(fs *flag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var(durationFlag{p}, name, usage)
}

// transportFlag is -transport: a mux.Transport by name.
type transportFlag struct{ t *mux.Transport }

func (f transportFlag) String() string {
	if f.t == nil {
		return mux.TransportAuto.String()
	}
	return f.t.String()
}

func (f transportFlag) Set(s string) error {
	for _, t := range []mux.Transport{mux.TransportAuto, mux.TransportEpoll, mux.TransportIOURing} {
		if s == t.String() {
			*f.t = t
			return nil
		}
	}
	return fmt.Errorf("want %s, %s or %s", mux.TransportAuto, mux.TransportEpoll, mux.TransportIOURing)
}

type startAtFlag struct{ t *time.Time }

func (f startAtFlag) String() string {
	if f.t == nil || f.t.IsZero() {
		return ""
	}
	return f.t.UTC().Format(time.RFC3339Nano)
}

func (f startAtFlag) Set(s string) error {
	t, err := parseWallTime(s)
	if err != nil {
		return errors.New("want an RFC 3339 time (2026-11-23T08:00:00Z) or Unix seconds")
	}
	*f.t = t
	return nil
}

// percentileList is the -percentiles flag.
type percentileList struct{ p *[]float64 }

func (l percentileList) String() string { return joinFloats(l.p) }

// joinFloats is a float list flag's value as given: comma-separated.
func joinFloats(p *[]float64) string {
	if p == nil {
		return ""
	}
	var parts []string
	for _, v := range *p {
		parts = append(parts, strconv.FormatFloat(v, 'f', -1, 64))
	}
	return strings.Join(parts, ",")
}

func (l percentileList) Set(s string) error {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(f), "p"))
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || !(v > 0 && v <= 100) {
			return fmt.Errorf("percentiles are numbers in (0, 100], comma-separated, e.g. 50,90,99,99.9")
		}
		for _, o := range out {
			if o == v {
				return fmt.Errorf("percentile %s given twice", f)
			}
		}
		out = append(out, v)
	}
	if len(out) > 12 {
		return errors.New("at most 12 percentiles")
	}
	*l.p = out
	return nil
}

type faultList []Fault

func (l *faultList) String() string { return fmt.Sprint(*l) }

func (l *faultList) Set(s string) error {
	f, err := ParseFault(s)
	if err != nil {
		return err
	}
	*l = append(*l, f)
	return nil
}

type holdFlag struct{ h *load.Hold }

func (f holdFlag) String() string {
	if f.h == nil {
		return "0"
	}
	return f.h.String()
}

func (f holdFlag) Set(s string) error {
	h, err := load.ParseHold(s)
	if err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), fmt.Sprintf("bad -hold %q: ", s)))
	}
	*f.h = h
	return nil
}

type keyDistFlag struct{ d *load.KeyDist }

func (f keyDistFlag) String() string {
	if f.d == nil {
		return load.KeysRoundRobin
	}
	return f.d.String()
}

func (f keyDistFlag) Set(s string) error {
	d, err := load.ParseKeyDist(s)
	if err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), fmt.Sprintf("bad -keys-dist %q: ", s)))
	}
	*f.d = d
	return nil
}

type noiseFlag struct{ p *float64 }

func (f noiseFlag) String() string {
	if f.p == nil {
		return ""
	}
	return strconv.FormatFloat(*f.p*100, 'f', -1, 64) + "%"
}

func (f noiseFlag) Set(s string) error {
	pct := strings.HasSuffix(s, "%")
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err != nil {
		return errors.New("want a share, e.g. 5% or 0.05")
	}
	if pct {
		v /= 100
	}
	if !(v >= 0 && v < 10) {
		return errors.New("want a share between 0 and 1000%")
	}
	*f.p = v
	return nil
}

// timeBound is a -start/-end bound: an absolute time (RFC 3339 or Unix
// seconds), or a duration from the earliest interval's start over every
// file.
type timeBound struct {
	set bool
	abs time.Time
	rel time.Duration
	isR bool
}

func (b *timeBound) String() string {
	switch {
	case !b.set:
		return ""
	case b.isR:
		return b.rel.String()
	}
	return b.abs.UTC().Format(time.RFC3339Nano)
}

func (b *timeBound) Set(s string) error {
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return errors.New("a duration from the logs' start must not be negative")
		}
		*b = timeBound{set: true, rel: d, isR: true}
		return nil
	}
	t, err := parseWallTime(s)
	if err != nil {
		return errors.New("want a duration from the logs' start (30s), an RFC 3339 time or Unix seconds")
	}
	*b = timeBound{set: true, abs: t}
	return nil
}

// at resolves the bound against the logs' earliest start.
func (b *timeBound) at(origin time.Time) time.Time {
	if b.isR {
		return origin.Add(b.rel)
	}
	return b.abs
}

type tagList struct{ p *[]string }

func (l tagList) String() string {
	if l.p == nil {
		return ""
	}
	return strings.Join(*l.p, ",")
}

func (l tagList) Set(s string) error {
	for _, t := range strings.Split(s, ",") {
		t = strings.TrimSpace(t)
		if _, err := path.Match(t, ""); err != nil || t == "" {
			return fmt.Errorf("bad tag pattern %q", t)
		}
		*l.p = append(*l.p, t)
	}
	return nil
}

type sloFlag struct {
	p    **report.SLO
	auto *bool
}

func (f sloFlag) String() string {
	if f.auto != nil && *f.auto {
		return "auto"
	}
	if f.p == nil || *f.p == nil {
		return ""
	}
	return (*f.p).String()
}

func (f sloFlag) Set(s string) error {
	if strings.TrimSpace(s) == "auto" {
		*f.p, *f.auto = nil, true
		return nil
	}
	v, err := parseSLO(s)
	if err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), fmt.Sprintf("bad -slo %q: ", s)))
	}
	*f.p, *f.auto = v, false
	return nil
}

// sloFromFlag is -slo-from: the objective an earlier sweep was judged by,
// read from its sweep.json (or the directory that holds it).
type sloFromFlag struct {
	p    **report.SLO
	auto *bool
	file *string
}

func (f sloFromFlag) String() string {
	if f.file == nil {
		return ""
	}
	return *f.file
}

func (f sloFromFlag) Set(s string) error {
	slo, err := sloFromFile(s)
	if err != nil {
		return err
	}
	*f.p, *f.auto, *f.file = slo, false, s
	return nil
}

type rateList struct{ p *[]float64 }

func (l rateList) String() string { return joinFloats(l.p) }

func (l rateList) Set(s string) error {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(v > 0 && v <= 1e8) {
			return errors.New("rates are operations per second > 0, comma-separated, e.g. 500,1000,2000")
		}
		out = append(out, v)
	}
	if len(out) > 100 {
		return errors.New("at most 100 rates")
	}
	sort.Float64s(out)
	for i := 1; i < len(out); i++ {
		if out[i] == out[i-1] {
			return fmt.Errorf("rate %g given twice", out[i])
		}
	}
	*l.p = out
	return nil
}
