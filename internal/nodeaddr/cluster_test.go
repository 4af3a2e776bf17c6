package nodeaddr

import (
	"errors"
	"strings"
	"testing"
)

func TestClusterURL(t *testing.T) {
	ok := map[string]string{
		"redis-cluster://127.0.0.1:7000":                              "redis-cluster://127.0.0.1:7000",
		"redis-cluster://u:secret@127.0.0.1:7000?seed=127.0.0.1:7001": "redis-cluster://u:***@127.0.0.1:7000?seed=127.0.0.1:7001",
		"redis-cluster://h1?seed=h2:7001&seed=h3&protocol=3":          "redis-cluster://h1:6379?seed=h2:7001&seed=h3:6379",
		"redis-cluster://:pw@[::1]:7000/0?client_name=x":              "redis-cluster://:***@[::1]:7000",
		"redis-cluster://127.0.0.1:7000?db=0":                         "redis-cluster://127.0.0.1:7000",
	}
	for in, display := range ok {
		na, err := Parse(-1, in, Defaults{})
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if na.Cluster == nil || na.Addr() != "" || na.Display != display {
			t.Errorf("%s: got %+v, display %q, want %q", in, na, na.Display, display)
		}
	}
	bad := map[string]string{
		"redis-cluster://h1,h2":                      "one member in the host part",
		"redis-cluster://h1/2":                       "one database",
		"redis-cluster://h1?db=3":                    "one database",
		"redis-cluster://h1?seed=h1":                 "given twice",
		"redis-cluster://h1?seed=h2:x":               "bad port",
		"redis-cluster://h1?cacert=/x":               "plaintext",
		"redis-cluster://h1?sentinelMasterId=m":      "unknown option",
		"redis-cluster://user@h1":                    "user without password",
		"redis-cluster://u:hunter2@h1?protocol=4":    "protocol",
		"redis-cluster://u:hunter2@h1?seed=h1:99999": "bad port",
	}
	for in, want := range bad {
		_, err := Parse(-1, in, Defaults{})
		if err == nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v, want %q", in, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: the password is in the error: %v", in, err)
		}
	}
}
