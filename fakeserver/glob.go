package fakeserver

// globMatch reports whether s matches the glob pattern p as Redis's
// stringmatchlen does (case-sensitive), for KEYS, SCAN MATCH and CONFIG
// GET: '*' any run of bytes, '?' any one byte, '[abc]' a class with
// ranges ('[a-z]', either order), '[^...]' its negation, '\x' x itself
// (also inside a class). As in Redis, a class without its ']' runs to the
// end of the pattern, and in "[a-]" the ']' ends the range a-], not the
// class. CONFIG GET lower-cases its pattern first.
func globMatch(p, s []byte) bool {
	for len(p) > 0 {
		switch p[0] {
		case '*':
			for len(p) > 1 && p[1] == '*' {
				p = p[1:]
			}
			if len(p) == 1 {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if globMatch(p[1:], s[i:]) {
					return true
				}
			}
			return false
		case '?':
			if len(s) == 0 {
				return false
			}
			s = s[1:]
		case '[':
			if len(s) == 0 {
				return false
			}
			p = p[1:]
			not := len(p) > 0 && p[0] == '^'
			if not {
				p = p[1:]
			}
			match := false
			for len(p) > 0 && p[0] != ']' {
				switch {
				case p[0] == '\\' && len(p) >= 2:
					p = p[1:]
					if p[0] == s[0] {
						match = true
					}
				case len(p) >= 3 && p[1] == '-':
					lo, hi := p[0], p[2]
					if lo > hi {
						lo, hi = hi, lo
					}
					ch := s[0]
					if ch >= lo && ch <= hi {
						match = true
					}
					p = p[2:]
				default:
					if p[0] == s[0] {
						match = true
					}
				}
				p = p[1:]
			}
			if not {
				match = !match
			}
			if !match {
				return false
			}
			s = s[1:]
			if len(p) == 0 {
				return len(s) == 0 // unterminated class: Redis stops here
			}
		case '\\':
			if len(p) >= 2 {
				p = p[1:]
			}
			fallthrough
		default:
			if len(s) == 0 || p[0] != s[0] {
				return false
			}
			s = s[1:]
		}
		p = p[1:]
	}
	return len(s) == 0
}
