package mux

import (
	"slices"
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
	} {
		if got := URLSecrets(tc.addr); !slices.Equal(got, tc.want) {
			t.Errorf("URLSecrets(%q) = %q, want %q", tc.addr, got, tc.want)
		}
		if got := HideURLSecrets(tc.addr); got != tc.hidden {
			t.Errorf("HideURLSecrets(%q) = %q, want %q", tc.addr, got, tc.hidden)
		}
	}
}
