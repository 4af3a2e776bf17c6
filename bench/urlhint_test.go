package bench

import (
	"bytes"
	"strings"
	"testing"
)

// A -nodes URL with a password that fails to parse gets the hint about
// escaping the password only when the fault is in the password; the
// password is never printed.
func TestNodesURLParseHint(t *testing.T) {
	tests := []struct {
		url, want, not string
	}{
		{"redis://:Zq$$7k@host:xyz", `invalid port ":xyz" after host`, "escape"},
		{"redis://app:Zq$$7k@host:xyz/0", `invalid port ":xyz" after host`, "escape"},
		{"redis://:Zq$$7k@[::1:6379", "missing ']' in host", "escape"},
		{"redis://:Zq%zz7k@host:6379", "escape special characters of the password with %XX", "invalid port"},
		{"redis://:Zq/7k@host:6379", "escape special characters of the password with %XX", "invalid port"},
		// Both at fault: both said.
		{"redis://:Zq/7k@host:xyz", `invalid port ":xyz" after host; and escape special characters of the password with %XX`, "user name"},
	}
	for _, tc := range tests {
		var out, errb bytes.Buffer
		code := Main([]string{"-nodes", tc.url, "-out", ""}, &out, &errb, noEnv)
		msg := errb.String()
		if code != ExitUsage {
			t.Errorf("%s: exit %d: %q", tc.url, code, msg)
		}
		if !strings.Contains(msg, tc.want) || strings.Contains(msg, tc.not) {
			t.Errorf("%s: %q: want %q, not %q", tc.url, msg, tc.want, tc.not)
		}
		for _, part := range []string{"Zq", "7k"} {
			if strings.Contains(msg+out.String(), part) {
				t.Errorf("%s: password part %q shown: %q", tc.url, part, msg)
			}
		}
	}
}
