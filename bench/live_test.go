package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redmux/redmux/bench/internal/report"
	"github.com/redmux/redmux/bench/load"
)

// exposition line: name{labels} value
var promLine = regexp.MustCompile(`^([a-z_]+)(\{[^}]*\})? (\S+)$`)

// scrape reads url and parses the Prometheus text format: series -> value.
// Every sample's family has a TYPE line before it.
func scrape(url string) (map[string]float64, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		return nil, fmt.Errorf("content type %q", ct)
	}
	out := map[string]float64{}
	typed := map[string]bool{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			typed[f[2]] = true
			continue
		}
		if strings.HasPrefix(line, "#") {
			continue
		}
		m := promLine.FindStringSubmatch(line)
		if m == nil {
			return nil, fmt.Errorf("bad line %q", line)
		}
		fam := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(m[1], "_bucket"), "_sum"), "_count")
		if !typed[fam] {
			return nil, fmt.Errorf("%q before its TYPE line", line)
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			return nil, fmt.Errorf("bad value in %q", line)
		}
		out[m[1]+m[2]] = v
	}
	return out, sc.Err()
}

// Issue 48 item 8: -metrics-addr serves the run's counters and latency
// histograms while it runs; scraped during a run on the embedded cluster
// (a node down, so that node errors are counted), the counters only grow,
// and at the end they are the report's.
func TestLiveMetrics(t *testing.T) {
	cfg, err := parseArgs([]string{"-fake", "3", "-fault", "down:2", "-strategy", "mux,seq", "-d", "1500ms", "-warmup", "100ms",
		"-timeout", "1s", "-c", "4", "-metrics-addr", "127.0.0.1:0", "-out", "", "-quiet"}, noEnv, false)
	require.NoError(t, err)

	var mu sync.Mutex
	var during []map[string]float64 // scrapes while a strategy was measured
	var final map[string]float64
	var scrapeErr error
	stop := make(chan struct{})
	var wg sync.WaitGroup
	o := Options{
		liveUp: func(url string) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 2000; i++ { // bounded; stopped at the end of the run
					select {
					case <-stop:
						return
					case <-time.After(50 * time.Millisecond):
					}
					m, err := scrape(url)
					mu.Lock()
					if err != nil && scrapeErr == nil {
						scrapeErr = err
					}
					if m != nil && (m[`redmux_bench_measuring{strategy="mux"}`] == 1 || m[`redmux_bench_measuring{strategy="seq"}`] == 1) {
						during = append(during, m)
					}
					mu.Unlock()
				}
			}()
		},
		liveDone: func(url string) {
			close(stop)
			wg.Wait()
			final, scrapeErr = scrape(url)
		},
	}
	rep, err := Run(context.Background(), cfg, o)
	require.NoError(t, err)
	require.NoError(t, scrapeErr)
	require.NotEmpty(t, during, "no scrape while a strategy was measured")

	ok := func(s string) string {
		return fmt.Sprintf(`redmux_bench_operations_total{strategy=%q,outcome="ok"}`, s)
	}
	failed := func(s string) string {
		return fmt.Sprintf(`redmux_bench_operations_total{strategy=%q,outcome="failed"}`, s)
	}
	// Counters only grow, and the scrapes during the run saw operations.
	seen := false
	for i, m := range during {
		for k, v := range m {
			if strings.Contains(k, "_total{") {
				if i > 0 {
					require.GreaterOrEqual(t, v, during[i-1][k], k)
				}
				require.LessOrEqual(t, v, final[k], k)
			}
		}
		seen = seen || m[ok("mux")] > 0
	}
	require.True(t, seen, "no scrape during the run saw a mux operation")

	require.Len(t, rep.Strategies, 2)
	for _, s := range rep.Strategies {
		require.Positive(t, s.Ops, s.Name)
		require.Equal(t, float64(s.Ops-s.Failed), final[ok(s.Name)], s.Name)
		require.Equal(t, float64(s.Failed), final[failed(s.Name)], s.Name)
		require.NotEmpty(t, s.NodeErrors, "%s: node 2 is down", s.Name)
		var sum int64
		for k, n := range s.NodeErrors {
			require.Equal(t, float64(n), final[fmt.Sprintf(`redmux_bench_node_errors_total{strategy=%q,kind=%q}`, s.Name, k)], "%s %s", s.Name, k)
			sum += n
		}
		var listed float64
		for k, v := range final {
			if strings.HasPrefix(k, fmt.Sprintf(`redmux_bench_node_errors_total{strategy=%q,`, s.Name)) {
				listed += v
			}
		}
		require.Equal(t, float64(sum), listed, "%s: node error kinds beyond the report's", s.Name)
		for metric, l := range map[string]report.Latency{load.MetricAcquire: s.Acquire, load.MetricRelease: s.Release,
			load.MetricAcquireRelease: s.AcquireRelease, load.MetricNotAcquired: s.NotAcquiredLat, load.MetricFailed: s.FailedLat} {
			series := fmt.Sprintf(`{strategy=%q,metric=%q`, s.Name, metric)
			require.Equal(t, float64(l.Count), final["redmux_bench_latency_seconds_count"+series+"}"], "%s %s", s.Name, metric)
			require.Equal(t, float64(l.Count), final["redmux_bench_latency_seconds_bucket"+series+`,le="+Inf"}`], "%s %s", s.Name, metric)
		}
		require.Zero(t, final[fmt.Sprintf(`redmux_bench_measuring{strategy=%q}`, s.Name)])
	}
}

// The live view listens only where it is told: a bad -metrics-addr is a
// usage error, a port in use fails the run before any cluster is started.
func TestLiveMetricsAddr(t *testing.T) {
	_, err := parseArgs([]string{"-metrics-addr", "9464"}, noEnv, false)
	require.ErrorContains(t, err, "want HOST:PORT")
	_, err = parseArgs([]string{"sweep", "-metrics-addr", "127.0.0.1:0"}[1:], noEnv, true)
	require.ErrorContains(t, err, "-metrics-addr is a flag of a run")
	busy := peer(t, func(c net.Conn) { _, _ = io.Copy(io.Discard, c) })
	cfg, err := parseArgs([]string{"-metrics-addr", busy, "-out", "", "-quiet"}, noEnv, false)
	require.NoError(t, err)
	_, err = Run(context.Background(), cfg, Options{})
	require.ErrorContains(t, err, "-metrics-addr")
}

// A value goes to the first bucket whose bound is at least it; beyond the
// last bound, to +Inf only.
func TestLiveHistBuckets(t *testing.T) {
	h := load.NewHistogram()
	for _, d := range []time.Duration{40 * time.Microsecond, time.Millisecond, 3 * time.Millisecond, 20 * time.Second} {
		load.Record(h, d)
	}
	var lh liveHist
	lh.add(h)
	lh.add(load.NewHistogram()) // an empty interval adds nothing
	var b strings.Builder
	writeLiveHist(&b, "mux", "acquire", &lh)
	for _, want := range []string{
		`le="5e-05"} 1`, `le="0.0005"} 1`, `le="0.001"} 2`, `le="0.0025"} 2`, `le="0.005"} 3`, `le="10"} 3`, `le="+Inf"} 4`,
		`redmux_bench_latency_seconds_count{strategy="mux",metric="acquire"} 4`,
	} {
		require.Contains(t, b.String(), want)
	}
	require.InDelta(t, 20.004, lh.sum, 0.05)
}
