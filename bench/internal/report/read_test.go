package report

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Read tells the kinds apart by content, and decodes on demand.
func TestReadKinds(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		doc  string
		kind Kind
	}{
		{`{"strategies":[{"name":"mux","ops":3}]}`, KindRun},
		{`{"strategies":[{"name":"mux","steps":[]}]}`, KindSweep},
		{`{"files":["a.hlog"],"tags":[]}`, KindMerged},
		{`{"strategies":[]}`, KindUnknown},
		{`{"strategies":[1]}`, KindUnknown},
		{`[1,2]`, KindUnknown},
	} {
		p := filepath.Join(dir, "r.json")
		require.NoError(t, os.WriteFile(p, []byte(c.doc), 0o644))
		f, err := Read(p)
		require.NoError(t, err, c.doc)
		require.Equal(t, c.kind, f.Kind, c.doc)
	}
	p := filepath.Join(dir, "run.json")
	require.NoError(t, os.WriteFile(p, []byte(`{"strategies":[{"name":"mux","ops":3}]}`), 0o644))
	f, err := Read(p)
	require.NoError(t, err)
	rep, err := f.Run()
	require.NoError(t, err)
	require.Equal(t, int64(3), rep.Strategies[0].Ops)

	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"strategies":`), 0o644))
	_, err = Read(bad)
	var fe *FormatError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, bad+": unexpected end of JSON input", err.Error())

	_, err = Read(filepath.Join(dir, "missing.json"))
	require.ErrorIs(t, err, os.ErrNotExist)
	require.NotErrorAs(t, err, &fe)
}
