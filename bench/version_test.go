package bench

import (
	"bytes"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionOf(t *testing.T) {
	settings := func(kv ...string) []debug.BuildSetting {
		var out []debug.BuildSetting
		for i := 0; i+1 < len(kv); i += 2 {
			out = append(out, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	tests := []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"no build info", nil, "redmux-bench (devel) go1.x"},
		{"test binary", &debug.BuildInfo{}, "redmux-bench (devel) go1.x"},
		{"tagged", &debug.BuildInfo{Main: debug.Module{Version: "v0.3.0"}}, "redmux-bench v0.3.0 go1.x"},
		{"checkout", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"},
			Settings: settings("vcs.revision", "0123456789abcdef0123", "vcs.time", "2026-11-25T20:00:00Z", "vcs.modified", "false")},
			"redmux-bench (devel) revision 0123456789ab (2026-11-25T20:00:00Z) go1.x"},
		{"dirty checkout", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"},
			Settings: settings("vcs.revision", "0123456789abcdef0123", "vcs.modified", "true")},
			"redmux-bench (devel) revision 0123456789ab+dirty go1.x"},
	}
	for _, tc := range tests {
		if got := versionOf(tc.bi, "go1.x"); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

// -version prints one line and exits 0, whatever else is on the command
// line, and runs nothing.
func TestMainVersion(t *testing.T) {
	for _, args := range [][]string{{"-version"}, {"--version"}, {"-version", "-c", "0"}, {"sweep", "-version"}} {
		var out, errb bytes.Buffer
		if code := Main(args, &out, &errb, noEnv); code != ExitOK {
			t.Fatalf("%v: exit %d (%q)", args, code, errb.String())
		}
		got := out.String()
		if !strings.HasPrefix(got, "redmux-bench ") || strings.Count(got, "\n") != 1 || !strings.Contains(got, runtime.Version()) {
			t.Errorf("%v: %q", args, got)
		}
		if errb.Len() != 0 {
			t.Errorf("%v: stderr %q", args, errb.String())
		}
	}
}
