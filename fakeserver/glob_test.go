package fakeserver

import "testing"

// TestGlobMatch: the one glob matcher (KEYS, SCAN MATCH, CONFIG GET)
// follows Redis's stringmatchlen.
func TestGlobMatch(t *testing.T) {
	for _, tc := range []struct {
		pat, s string
		want   bool
	}{
		// literals
		{"", "", true},
		{"", "a", false},
		{"abc", "abc", true},
		{"abc", "abd", false},
		{"abc", "ab", false},
		{"ab", "abc", false},
		{"abc", "ABC", false}, // case-sensitive
		// '*'
		{"*", "", true},
		{"*", "anything", true},
		{"a*", "a", true},
		{"a*", "abc", true},
		{"a*", "ba", false},
		{"*c", "abc", true},
		{"*c", "abd", false},
		{"a*c", "ac", true},
		{"a*c", "abbbc", true},
		{"a*c", "abcd", false},
		{"a**c", "abc", true},
		{"*a*b*", "xaxxbx", true},
		{"*a*b*", "xbxa", false},
		{"lock:*:owner", "lock:r1:owner", true},
		{"lock:*:owner", "lock:r1:owners", false},
		// '?'
		{"?", "a", true},
		{"?", "", false},
		{"?", "ab", false},
		{"a?c", "abc", true},
		{"a?c", "ac", false},
		{"??*", "ab", true},
		{"??*", "a", false},
		// classes
		{"[abc]", "b", true},
		{"[abc]", "d", false},
		{"[abc]", "", false},
		{"h[ae]llo", "hello", true},
		{"h[ae]llo", "hallo", true},
		{"h[ae]llo", "hillo", false},
		// ranges, either order
		{"[a-c]", "b", true},
		{"[a-c]", "d", false},
		{"[c-a]", "b", true},
		{"[0-9][0-9]", "42", true},
		{"[0-9][0-9]", "4x", false},
		{"[a-cx-z]", "y", true},
		{"[a-cx-z]", "m", false},
		// negation
		{"[^abc]", "d", true},
		{"[^abc]", "a", false},
		{"[^a-c]", "b", false},
		{"[^a-c]", "z", true},
		{"h[^e]llo", "hallo", true},
		{"h[^e]llo", "hello", false},
		{"[^a]", "", false},
		// escapes
		{`\*`, "*", true},
		{`\*`, "a", false},
		{`\?`, "?", true},
		{`\?`, "a", false},
		{`a\[b`, "a[b", true},
		{`\\`, `\`, true},
		{`\a`, "a", true},
		{`[\]]`, "]", true},
		{`[\]]`, "a", false},
		{`[\-a]`, "-", true},
		{`[\^]`, "^", true},
		{`abc\`, `abc\`, true}, // a trailing backslash is itself
		// Redis's edge cases
		{"[abc", "b", true},   // unterminated class: runs to the end of the pattern
		{"[abc", "bz", false}, // ... and matches only the last byte
		{"[a-]", "_", true},   // ']' ends the range a-] (']' < '_' < 'a')
		{"[a-]", "-", false},  // '-' is not in it
		{"[]", "x", false},    // an empty class matches nothing
		{"[^]", "x", true},    // and its negation any byte
		{"a[", "ab", false},   // '[' last: an empty class, matches nothing
	} {
		if got := globMatch([]byte(tc.pat), []byte(tc.s)); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tc.pat, tc.s, got, tc.want)
		}
	}
}
