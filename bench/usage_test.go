package bench

import (
	"bytes"
	"flag"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// -h lists every flag its mode defines exactly once, in groups, with its
// default at most once; every group names only flags that exist.
func TestUsageListsEveryFlagOnce(t *testing.T) {
	tests := []struct {
		name   string
		sweep  bool
		usage  func(*bytes.Buffer)
		groups []string // headings, in order
	}{
		{"run", false, func(b *bytes.Buffer) { writeUsage(b) }, []string{"\nTarget", "\nTLS:", "\nEmbedded cluster:", "\nLoad:", "\nWorkload:", "\nOutput:", "\nMisc:"}},
		{"sweep", true, func(b *bytes.Buffer) { sweepUsage(b) }, []string{"\nTarget", "\nTLS:", "\nEmbedded cluster:", "\nLoad:", "\nWorkload:", "\nSweep:", "\nOutput:", "\nMisc:"}},
	}
	defined := map[string]bool{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			tc.usage(&b)
			text := b.String()
			// entries: flag name -> its lines ("  -name ..." and the usage line)
			entries := map[string][]string{}
			lines := strings.Split(text, "\n")
			for i, l := range lines {
				if !strings.HasPrefix(l, "  -") {
					continue
				}
				name := strings.TrimPrefix(strings.Fields(l)[0], "-")
				entry := l
				if i+1 < len(lines) {
					entry += "\n" + lines[i+1]
				}
				entries[name] = append(entries[name], entry)
			}
			var c Config
			var f faultList
			var nodes, strategy string
			fs := newFlagSet(&c, &f, &nodes, &strategy, tc.sweep)
			n := 0
			fs.VisitAll(func(fl *flag.Flag) {
				n++
				defined[fl.Name] = true
				got := entries[fl.Name]
				if len(got) != 1 {
					t.Errorf("-%s listed %d times", fl.Name, len(got))
					return
				}
				if k := strings.Count(got[0], "(default"); k > 1 {
					t.Errorf("-%s shows %d defaults: %q", fl.Name, k, got[0])
				}
			})
			if len(entries) != n+1 { // + "-h,"
				t.Errorf("%d entries for %d flags and -h", len(entries), n)
			}
			if strings.Contains(text, "\nOther:") {
				t.Errorf("flags outside every group:\n%s", text[strings.Index(text, "\nOther:"):])
			}
			at := 0
			for _, g := range tc.groups {
				k := strings.Index(text[at:], g)
				if k < 0 {
					t.Fatalf("heading %q missing or out of order", g)
				}
				at += k
			}
		})
	}
	for _, g := range flagGroups {
		for _, name := range g.names {
			if !defined[name] {
				t.Errorf("group %q names -%s, which no mode defines", g.title, name)
			}
		}
	}
}

// -keys states its default once, with the contended workload's.
func TestUsageKeysDefaultOnce(t *testing.T) {
	var b bytes.Buffer
	writeUsage(&b)
	i := strings.Index(b.String(), "  -keys int\n")
	if i < 0 {
		t.Fatal("no -keys entry")
	}
	entry := strings.SplitN(b.String()[i:], "\n", 3)[1]
	if strings.Count(entry, "default") != 1 || !strings.Contains(entry, "10000") || !strings.Contains(entry, "contended") {
		t.Errorf("-keys: %q", entry)
	}
}

// Issue 48 item 6: -h says the exit statuses come from a built binary
// (go run exits 1 for every failure).
func TestUsageSaysGoRunExitsOne(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"sweep", "-h"}} {
		var out, errb bytes.Buffer
		require.Equal(t, ExitOK, Main(args, &out, &errb, noEnv))
		require.Contains(t, out.String(), "from a built binary (go build -o bin/redmux-bench ./cmd/redmux-bench): go run exits 1 for all", args)
	}
}
