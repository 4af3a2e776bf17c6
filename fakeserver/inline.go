package fakeserver

import "strconv"

// Inline (telnet-style) requests are parsed here, as Redis parses them
// (sdssplitargs), and re-encoded as one multibulk request for redcon's
// reader. redcon's own inline parser copies the rest of the line for every
// word, which is quadratic in the line length (issue 16 D8), and it knows
// neither Redis's separators nor its escapes.

// errUnbalancedQuotes is Redis's reply to an inline line that sdssplitargs
// refuses.
var errUnbalancedQuotes = protoError("unbalanced quotes in request")

// appendInlineAsMultibulk parses one inline line (without its line ending)
// and appends it to dst as a RESP multibulk request. An empty line appends
// nothing. It makes two passes over the line so the argument count is known
// before anything is written, and allocates only dst's growth.
func appendInlineAsMultibulk(dst, line []byte) ([]byte, error) {
	argc := 0
	if err := splitArgs(line, func(arg []byte, _ int) { argc++ }); err != nil {
		return dst, err
	}
	if argc == 0 {
		return dst, nil
	}
	dst = append(dst, '*')
	dst = strconv.AppendInt(dst, int64(argc), 10)
	dst = append(dst, '\r', '\n')
	_ = splitArgs(line, func(arg []byte, n int) {
		dst = append(dst, '$')
		dst = strconv.AppendInt(dst, int64(n), 10)
		dst = append(dst, '\r', '\n')
		dst = appendUnquoted(dst, arg)
		dst = append(dst, '\r', '\n')
	})
	return dst, nil
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func hexVal(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// splitArgs walks line with sdssplitargs's rules and calls f with the raw
// bytes of each argument (quotes included) and its decoded length.
func splitArgs(line []byte, f func(raw []byte, n int)) error {
	p := 0
	for {
		for p < len(line) && isSpace(line[p]) {
			p++
		}
		if p == len(line) {
			return nil
		}
		start, n := p, 0
		inq, insq := false, false
	word:
		for {
			var c byte // 0 stands for the end of the line
			if p < len(line) {
				c = line[p]
			}
			switch {
			case inq:
				switch {
				case c == '\\' && p+3 < len(line) && line[p+1] == 'x' && isHex(line[p+2]) && isHex(line[p+3]):
					p += 3
					n++
				case c == '\\' && p+1 < len(line):
					p++
					n++
				case c == '"':
					if p+1 < len(line) && !isSpace(line[p+1]) {
						return errUnbalancedQuotes
					}
					inq = false
					p++
					break word
				case p == len(line):
					return errUnbalancedQuotes
				default:
					n++
				}
			case insq:
				switch {
				case c == '\\' && p+1 < len(line) && line[p+1] == '\'':
					p++
					n++
				case c == '\'':
					if p+1 < len(line) && !isSpace(line[p+1]) {
						return errUnbalancedQuotes
					}
					insq = false
					p++
					break word
				case p == len(line):
					return errUnbalancedQuotes
				default:
					n++
				}
			default:
				switch c {
				case ' ', '\n', '\r', '\t', 0:
					break word
				case '"':
					inq = true
				case '\'':
					insq = true
				default:
					n++
				}
			}
			p++
		}
		f(line[start:p], n)
	}
}

// appendUnquoted decodes one argument's raw bytes (as found by splitArgs)
// onto dst.
func appendUnquoted(dst, raw []byte) []byte {
	inq, insq := false, false
	for p := 0; p < len(raw); p++ {
		c := raw[p]
		switch {
		case inq:
			switch {
			case c == '\\' && p+3 < len(raw) && raw[p+1] == 'x' && isHex(raw[p+2]) && isHex(raw[p+3]):
				dst = append(dst, hexVal(raw[p+2])<<4|hexVal(raw[p+3]))
				p += 3
			case c == '\\' && p+1 < len(raw):
				p++
				switch raw[p] {
				case 'n':
					dst = append(dst, '\n')
				case 'r':
					dst = append(dst, '\r')
				case 't':
					dst = append(dst, '\t')
				case 'b':
					dst = append(dst, '\b')
				case 'a':
					dst = append(dst, '\a')
				default:
					dst = append(dst, raw[p])
				}
			case c == '"':
				inq = false
			default:
				dst = append(dst, c)
			}
		case insq:
			switch {
			case c == '\\' && p+1 < len(raw) && raw[p+1] == '\'':
				p++
				dst = append(dst, '\'')
			case c == '\'':
				insq = false
			default:
				dst = append(dst, c)
			}
		case c == '"':
			inq = true
		case c == '\'':
			insq = true
		default:
			dst = append(dst, c)
		}
	}
	return dst
}
