package nodeaddr

import (
	"slices"
	"strings"
	"testing"
)

func TestURLSecrets(t *testing.T) {
	for _, tc := range []struct {
		addr   string
		want   []string
		hidden string
	}{
		{"127.0.0.1:6379", nil, "127.0.0.1:6379"},
		{"redis://h:1", nil, "redis://h:1"},
		{"redis://u:p%40w@h:1/0?client_name=x", []string{"p%40w", "p@w"}, "redis://u:***@h:1/0?client_name=x"},
		{"redis://:p@w@h:1", []string{"p@w"}, "redis://:***@h:1"},
		{"redis-sentinel://h:26379?sentinelMasterId=m&sentinel_password=Tr0@horse", []string{"Tr0@horse"},
			"redis-sentinel://h:26379?sentinelMasterId=m&sentinel_password=***"},
		{"redis-sentinel://a:pw@h?sentinel_password=s%26p&sentinelMasterId=m&sentinel_password=two#x", []string{"pw", "s%26p", "s&p", "two#x"},
			"redis-sentinel://a:***@h?sentinel_password=***&sentinelMasterId=m&sentinel_password=***"},
		{"redis-sentinel://h?sentinel%5Fpassword=esc&sentinelMasterId=m", []string{"esc"}, "redis-sentinel://h?sentinel%5Fpassword=***&sentinelMasterId=m"},
		{"redis-sentinel://h?sentinel_password=&sentinelMasterId=m", nil, "redis-sentinel://h?sentinel_password=&sentinelMasterId=m"},
		// issue 46: an option no node URL knows (go-redis's dial_timeout)
		// made the last '@', in sentinel_password, end the user
		// information
		{"redis-sentinel://:nodepw@h:26379?sentinelMasterId=m&sentinel_password=p@ssw0rd&dial_timeout=5s", []string{"nodepw", "p@ssw0rd"},
			"redis-sentinel://:***@h:26379?sentinelMasterId=m&sentinel_password=***&dial_timeout=5s"},
		{"redis-sentinel://h:26379?sentinelMasterId=m&dial_timeout=5s&sentinel_password=p@ssw0rd", []string{"p@ssw0rd"},
			"redis-sentinel://h:26379?sentinelMasterId=m&dial_timeout=5s&sentinel_password=***"},
		{"redis://:pw@h:6379?client_name=a@b&read_timeout=1s", []string{"pw"}, "redis://:***@h:6379?client_name=a@b&read_timeout=1s"},
	} {
		if got := URLSecrets(tc.addr); !slices.Equal(got, tc.want) {
			t.Errorf("URLSecrets(%q) = %q, want %q", tc.addr, got, tc.want)
		}
		if got := HideURLSecrets(tc.addr); got != tc.hidden {
			t.Errorf("HideURLSecrets(%q) = %q, want %q", tc.addr, got, tc.hidden)
		}
		// nothing Parse says of the URL holds a password either
		_, err := Parse(-1, tc.addr, Defaults{})
		for _, p := range []string{"nodepw", "ssw0rd", "Tr0@horse"} {
			if err != nil && strings.Contains(err.Error(), p) {
				t.Errorf("Parse(%q): the password is in the error: %v", tc.addr, err)
			}
			if strings.Contains(RedactURL(tc.addr), p) {
				t.Errorf("RedactURL(%q) = %q", tc.addr, RedactURL(tc.addr))
			}
		}
	}
}
