package hlog

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/redmux/redmux/bench/internal/hdrtest"
	"github.com/stretchr/testify/require"
)

func TestHlogRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	start := time.UnixMilli(1_700_000_000_123)
	var buf bytes.Buffer
	hw := NewWriter(&buf, start, "test log", "second comment")
	var want []*hdr.Histogram
	tags := []string{"seq.acquire", "seq.release", "mux.acquire_release"}
	for i := 0; i < 6; i++ {
		h := hdrtest.RandomHist(r, 500+i*100, nil)
		from := start.Add(time.Duration(i) * time.Second)
		require.NoError(t, hw.Write(tags[i%3], h, from, from.Add(time.Second)))
		want = append(want, h)
	}
	require.NoError(t, hw.Err())
	text := buf.String()
	require.Contains(t, text, "#[Histogram log format version 1.3]")
	require.Contains(t, text, "#[StartTime: 1700000000")
	require.Contains(t, text, "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"")
	require.Contains(t, text, "Tag=seq.acquire,0.123000,1.000000,")

	got, err := Read(strings.NewReader(text))
	require.NoError(t, err)
	require.Len(t, got, len(want))
	for i := range want {
		require.True(t, want[i].Equals(got[i]), "interval %d differs after the round trip", i)
		require.Equal(t, tags[i%3], got[i].Tag())
		from := start.Add(time.Duration(i) * time.Second)
		require.Equal(t, from.UnixMilli(), got[i].StartTimeMs())
		require.Equal(t, from.Add(time.Second).UnixMilli(), got[i].EndTimeMs())
		require.Equal(t, want[i].ValueAtQuantile(99.9), got[i].ValueAtQuantile(99.9))
	}
}

func TestReadHlogBadInput(t *testing.T) {
	_, err := Read(strings.NewReader("0.1,1.0,2.0,HISTFAAAAnotbase64!!\n"))
	require.ErrorIs(t, err, ErrBad)

	dir := t.TempDir()
	p := filepath.Join(dir, "empty.hlog")
	require.NoError(t, os.WriteFile(p, []byte("#just a comment\n"), 0o644))
	_, _, err = MergeFiles([]string{p})
	require.ErrorIs(t, err, ErrBad)
}
