package mux

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file holds the one scrubber every text a node sends passes through
// before it reaches an error or an Incarnation (issue 46): the node's
// secrets out, control characters escaped, the length bounded.

const (
	// maxQuoted is the most bytes of one server text (a reply, a host) an
	// error quotes.
	maxQuoted = 256
	// maxCause is the most bytes of the text of a node's error cause
	// (what NodeErr and failed calls say), however many texts it quotes.
	maxCause = 4096
)

// secrets returns the texts of node ns that must never be printed: its
// password and, for a Sentinel node, the sentinels'.
func (ns *nodeSpec) secrets() []string {
	var out []string
	if ns.password != "" {
		out = append(out, ns.password)
	}
	if ns.sentinel != nil && ns.sentinel.password != "" {
		out = append(out, ns.sentinel.password)
	}
	return out
}

// cleanText returns text with every secret (as given, and as Go quotes
// it, resp.Reply.String's form) replaced by ***, control characters and
// DEL escaped (\r, \n, \t, \xNN), and cut to max bytes (at a character's
// start) with the length it had said.
func cleanText(text string, max int, secrets []string) string {
	for _, s := range secrets {
		if s == "" {
			continue
		}
		text = strings.ReplaceAll(text, s, "***")
		if q := strconv.Quote(s); q[1:len(q)-1] != s {
			text = strings.ReplaceAll(text, q[1:len(q)-1], "***")
		}
	}
	clean := true
	for k := 0; k < len(text); k++ {
		if text[k] < ' ' || text[k] == 0x7f {
			clean = false
			break
		}
	}
	if !clean {
		var b strings.Builder
		for k := 0; k < len(text); k++ {
			switch c := text[k]; {
			case c == '\r':
				b.WriteString(`\r`)
			case c == '\n':
				b.WriteString(`\n`)
			case c == '\t':
				b.WriteString(`\t`)
			case c < ' ' || c == 0x7f:
				b.WriteString(`\x`)
				b.WriteByte("0123456789abcdef"[c>>4])
				b.WriteByte("0123456789abcdef"[c&15])
			default:
				b.WriteByte(c)
			}
		}
		text = b.String()
	}
	if len(text) <= max {
		return text
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut] + "... (" + strconv.Itoa(len(text)) + " bytes)"
}

// cleanError is an error whose text was cleaned (cleanCause); errors.Is
// and errors.As see the error it stands for.
type cleanError struct {
	text string
	err  error
}

func (e *cleanError) Error() string { return e.text }
func (e *cleanError) Unwrap() error { return e.err }

// cleanCause returns cause with its text cleaned of node i's secrets and
// bounded (maxCause): cause itself when that changes nothing.
func (c *Client) cleanCause(i int, cause error) error {
	if cause == nil {
		return nil
	}
	text := cause.Error()
	clean := cleanText(text, maxCause, c.cfg.nodes[i].secrets())
	if clean == text {
		return cause
	}
	return &cleanError{text: clean, err: cause}
}
