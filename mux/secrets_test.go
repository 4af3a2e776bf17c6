package mux

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redmux/redmux/resp"
)

// No password reaches an error through a server's text, and no server
// text reaches one raw or unbounded (issue 46): a ROLE reply that echoes
// the node's password, an INFO refusal that does (Incarnation.Err), a
// sentinel's refusal that echoes sentinel_password, a sentinel naming a
// 300 kB host or one with CR LF in it.

const (
	nodePW     = "hunter2node"
	sentinelPW = "s3ntinelpw"
)

// checkClean fails t if text holds a password, a CR or LF, or more than
// max bytes.
func checkClean(t *testing.T, what, text string, max int) {
	t.Helper()
	for _, p := range []string{nodePW, sentinelPW} {
		if strings.Contains(text, p) {
			t.Errorf("%s: the password %q is in the text: %.300q", what, p, text)
		}
	}
	if strings.ContainsAny(text, "\r\n") {
		t.Errorf("%s: CR or LF in the text: %.300q", what, text)
	}
	if len(text) > max {
		t.Errorf("%s: %d bytes of text, want at most %d: %.300q", what, len(text), max, text)
	}
}

// sentinelNode returns a client of one Sentinel node, its sentinel
// answering answer (raw RESP) to GET-MASTER-ADDR-BY-NAME, and the node's
// error once its first dial is done.
func sentinelNode(t *testing.T, answer string) error {
	t.Helper()
	s := fakeSentinel(t, answer)
	c, err := New(Config{
		Addrs:        []string{"redis-sentinel://:" + nodePW + "@" + s + "?sentinelMasterId=m&sentinel_password=" + sentinelPW},
		DialTimeout:  2 * time.Second,
		ReconnectMin: time.Hour, ReconnectMax: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.NodeErr(0)
}

func TestSecretsNotInRoleReply(t *testing.T) {
	for _, role := range []string{
		"+" + nodePW + "\r\n",
		"$" + strconv.Itoa(len(nodePW)) + "\r\n" + nodePW + "\r\n",
		"*1\r\n$" + strconv.Itoa(len(nodePW)) + "\r\n" + nodePW + "\r\n",
		"*2\r\n+slave " + nodePW + "\r\n+x\r\n",
		"-ERR no ROLE for " + nodePW + "\r\n",
		"$13\r\nslave\r\n\r\nEVIL\r\n",
		"$300000\r\n" + strings.Repeat("x", 300000) + "\r\n",
	} {
		h := startHostile(t, func(h *hostile) {
			h.reply = func(cn *hconn, args [][]byte, out []byte) []byte {
				if string(args[0]) == "ROLE" {
					return []byte(role)
				}
				return out
			}
		})
		err := sentinelNode(t, addrReply(h.addr()))
		if err == nil || !strings.Contains(err.Error(), "ROLE") {
			t.Fatalf("ROLE %.40q: node error %v, want the ROLE refused", role, err)
		}
		checkClean(t, "ROLE "+strconv.QuoteToASCII(role[:min(len(role), 40)]), err.Error(), 4096)
		h.close()
	}
}

func TestSecretsNotInSentinelReply(t *testing.T) {
	big := strings.Repeat("h", 300000)
	for _, answer := range []string{
		"-ERR WRONGPASS " + sentinelPW + " " + nodePW + "\r\n",
		"*2\r\n$" + strconv.Itoa(len(big)) + "\r\n" + big + "\r\n$4\r\n6379\r\n",
		"*2\r\n$14\r\nhost\r\nEVIL\r\nxy\r\n$4\r\n6379\r\n",
		"*3\r\n+" + sentinelPW + "\r\n+a\r\n+b\r\n",
		"*2\r\n+" + sentinelPW + "\r\n+port\r\n",
	} {
		err := sentinelNode(t, answer)
		if err == nil {
			t.Fatalf("answer %.40q: the node is up", answer)
		}
		checkClean(t, "sentinel answer "+strconv.QuoteToASCII(answer[:min(len(answer), 40)]), err.Error(), 4096)
	}
}

func TestSecretsNotInIncarnation(t *testing.T) {
	for _, info := range []string{
		"-ERR INFO denied for " + nodePW + "\r\n",
		"-ERR " + strings.Repeat("y", 100000) + "\r\n",
	} {
		h := startHostile(t, func(h *hostile) {
			h.reply = func(cn *hconn, args [][]byte, out []byte) []byte {
				if string(args[0]) == "INFO" {
					return []byte(info)
				}
				return out
			}
		})
		c, err := New(Config{Addrs: []string{"redis://:" + nodePW + "@" + h.addr()}, Incarnations: true,
			DialTimeout: 2 * time.Second, ReconnectMin: time.Hour, ReconnectMax: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		inc := c.Incarnation(0)
		c.Close()
		h.close()
		if inc == nil || inc.Known || inc.Err == "" {
			t.Fatalf("incarnation %+v, want unknown with the INFO refusal", inc)
		}
		checkClean(t, "Incarnation.Err", inc.Err, 512)
	}
}

func TestCleanText(t *testing.T) {
	for _, tc := range []struct {
		in      string
		max     int
		secrets []string
		want    string
	}{
		{"plain", 100, nil, "plain"},
		{"a\r\nb\x00c\x7f", 100, nil, `a\r\nb\x00c\x7f`},
		{"say pw and pw", 100, []string{"pw"}, "say *** and ***"},
		{"quoted \"p\\\"w\"", 100, []string{`p"w`}, `quoted "***"`},
		{strings.Repeat("x", 50), 10, nil, "xxxxxxxxxx... (50 bytes)"},
		{"ééééé", 5, nil, "éé... (10 bytes)"},
	} {
		if got := cleanText(tc.in, tc.max, tc.secrets); got != tc.want {
			t.Errorf("cleanText(%q, %d, %q) = %q, want %q", tc.in, tc.max, tc.secrets, got, tc.want)
		}
	}
}

// An error reply that echoes the password, or holds CR LF (a RESP3 bulk
// error), reaches the caller's *ServerError cleaned.
func TestSecretsNotInServerError(t *testing.T) {
	for _, reply := range []string{
		"-ERR no such key for " + nodePW + "\r\n",
		"!21\r\nERR line\r\n" + nodePW + "\r\n",
	} {
		h := startHostile(t, func(h *hostile) {
			h.reply = func(cn *hconn, args [][]byte, out []byte) []byte {
				if string(args[0]) == "GET" {
					return []byte(reply)
				}
				return out
			}
		})
		c, err := New(Config{Addrs: []string{"redis://:" + nodePW + "@" + h.addr()}, RESP3: true, DialTimeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		b := c.NewBatch()
		b.Add(0, resp.AppendCommand(nil, "GET", "k"))
		if _, err := c.Do(t.Context(), b, Policy{}); err != nil {
			t.Fatal(err)
		}
		_, err = b.Last(0)
		c.Close()
		h.close()
		if !errors.Is(err, ErrServer) {
			t.Fatalf("reply %q: %v, want a server error", reply, err)
		}
		checkClean(t, "server error", err.Error(), 4096)
	}
}
