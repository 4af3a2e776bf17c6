package mux

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/redmux/redmux/resp"
)

// The EVAL fallback is chosen by the error's first word, NOSCRIPT, never by
// the rest of its text: servers word it differently (Valkey 8 answers
// "NOSCRIPT No matching script.", Redis adds " Please use EVAL."; a client
// that compared the whole text broke on Valkey, symfony/lock #59387). An
// error whose first word is another one is the node's error, no fallback.
func TestNoScriptMatchedByPrefix(t *testing.T) {
	tests := []struct {
		name     string
		reply    string // the node's answer to EVALSHA
		fallback bool   // EVAL resent, and its :1 reaches the command
	}{
		{"valkey", "-NOSCRIPT No matching script.\r\n", true},
		{"redis", "-NOSCRIPT No matching script. Please use EVAL.\r\n", true},
		{"code only", "-NOSCRIPT\r\n", true},
		{"other words", "-NOSCRIPT script cache flushed, send it again\r\n", true},
		{"longer code", "-NOSCRIPTS No matching script.\r\n", false},
		{"ERR mentioning it", "-ERR NOSCRIPT No matching script.\r\n", false},
		{"lower case", "-noscript No matching script.\r\n", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := startHostile(t, func(h *hostile) {
				h.reply = func(_ *hconn, args [][]byte, r []byte) []byte {
					switch string(args[0]) {
					case "EVALSHA":
						return []byte(tc.reply)
					case "EVAL":
						return []byte(":1\r\n")
					}
					return r
				}
			})
			c := newTestClient(t, []string{h.addr()}, func(cfg *Config) { cfg.Conns = 1 })
			b := c.NewBatch()
			b.AddExpect(0, resp.AppendCommand(nil, "EVALSHA", c.cfg.Scripts[0].SHA, "1", "k", "v"), ExpectInt)
			if _, err := c.Do(context.Background(), b, Policy{}); err != nil {
				t.Fatal(err)
			}
			rep, err := b.Last(0)
			evals := h.evals.Load()
			if tc.fallback {
				if err != nil || rep.N != 1 || evals != 1 {
					t.Fatalf("reply %v, err %v, %d EVAL sent: want the EVAL fallback's :1 after one EVAL", rep, err, evals)
				}
				return
			}
			var se *ServerError
			want := strings.TrimSuffix(tc.reply[1:], "\r\n")
			if !errors.As(err, &se) || se.Text != want || evals != 0 {
				t.Fatalf("err %v, %d EVAL sent: want the node's error %q and no fallback", err, evals, want)
			}
		})
	}
}
