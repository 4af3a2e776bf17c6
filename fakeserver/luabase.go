package fakeserver

import (
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// Base-library functions that gopher-lua does differently from the Lua
// 5.1 of Redis 7.0, replaced in the node's Lua state before the sandbox is
// made read-only (luaState calls fixBase).

// fixBase replaces L's base functions listed above, and sets math.huge to
// +Inf (gopher-lua's is the largest finite float, so 1e308*10 ==
// math.huge was false).
func fixBase(L *lua.LState) {
	g := L.G.Global
	if m, ok := g.RawGetString("math").(*lua.LTable); ok {
		m.RawSetString("huge", lua.LNumber(math.Inf(1)))
	}
	g.RawSetString("tonumber", L.NewFunction(luaToNumber))
	if orig, ok := g.RawGetString("pcall").(*lua.LFunction); ok && orig.GFunction != nil {
		g.RawSetString("pcall", L.NewFunction(redisPcall(orig.GFunction)))
	}
}

// redisPcall wraps pcall as Redis 7.0 does (luaRedisPcall): a caught error
// that is a table with a string (or number) err field, as redis.call and
// redis.error_reply raise, comes back as that field, so
// `local ok, e = pcall(redis.call, 'NOPE')` gives a string e. Other errors
// and successes are pcall's own.
func redisPcall(orig lua.LGFunction) lua.LGFunction {
	return func(L *lua.LState) int {
		n := orig(L)
		if n != 2 || L.Get(-2) != lua.LFalse {
			return n
		}
		if t, ok := L.Get(-1).(*lua.LTable); ok {
			switch msg := t.RawGetString("err").(type) {
			case lua.LString, lua.LNumber:
				L.Replace(-1, msg)
			}
		}
		return n
	}
}

// luaToNumber is Lua 5.1's tonumber(e [, base]) as Redis's Lua runs it:
// in base 10, C's strtod (exponents, "0x" hex and hex floats, inf and nan,
// any magnitude: gopher-lua's refused '1e3' and '9223372036854775808'),
// then only spaces; in other bases (2..36), C's strtoul (a sign, "0x" in
// base 16, wrapping modulo 2^64, saturating at its maximum). Leading and
// trailing spaces are allowed, and a string ends at its first NUL byte, as
// a C string does.
func luaToNumber(L *lua.LState) int {
	base := 10
	switch b := L.Get(2).(type) {
	case *lua.LNilType:
	case lua.LNumber:
		base = int(b)
	case lua.LString:
		f, ok := strtodFull(string(b))
		if !ok {
			luaRaiseWhere(L, "bad argument #2 to 'tonumber' (number expected, got string)")
		}
		base = int(f)
	default:
		luaRaiseWhere(L, "bad argument #2 to 'tonumber' (number expected, got "+b.Type().String()+")")
	}
	v := L.Get(1)
	if base == 10 {
		if L.GetTop() < 1 {
			luaRaiseWhere(L, "bad argument #1 to 'tonumber' (value expected)")
		}
		switch x := v.(type) {
		case lua.LNumber:
			L.Push(x)
			return 1
		case lua.LString:
			if f, ok := strtodFull(string(x)); ok {
				L.Push(lua.LNumber(f))
				return 1
			}
		}
		L.Push(lua.LNil)
		return 1
	}
	var s string
	switch x := v.(type) {
	case lua.LString:
		s = string(x)
	case lua.LNumber:
		s = x.String()
	default:
		got := "no value"
		if L.GetTop() >= 1 {
			got = v.Type().String()
		}
		luaRaiseWhere(L, "bad argument #1 to 'tonumber' (string expected, got "+got+")")
	}
	if base < 2 || base > 36 {
		luaRaiseWhere(L, "bad argument #2 to 'tonumber' (base out of range)")
	}
	s = cString(s)
	n, end := strtoul(s, base)
	if end == 0 || !onlySpaces(s[end:]) {
		L.Push(lua.LNil)
		return 1
	}
	L.Push(lua.LNumber(float64(n)))
	return 1
}

// cString is s up to its first NUL byte.
func cString(s string) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return s[:i]
	}
	return s
}

// isCSpace is C's isspace in the C locale.
func isCSpace(c byte) bool { return c == ' ' || (c >= '\t' && c <= '\r') }

func skipSpaces(s string, i int) int {
	for i < len(s) && isCSpace(s[i]) {
		i++
	}
	return i
}

func onlySpaces(s string) bool { return skipSpaces(s, 0) == len(s) }

// strtodFull is Lua 5.1's luaO_str2d: s (to its first NUL) is one number
// as C's strtod reads it, with only spaces around it.
func strtodFull(s string) (float64, bool) {
	s = cString(s)
	f, end := strtod(s)
	if end == 0 || !onlySpaces(s[end:]) {
		return 0, false
	}
	return f, true
}

// strtod is glibc's strtod in the C locale: it returns the number at the
// start of s (after spaces) and the index just past it; end 0: none.
func strtod(s string) (float64, int) {
	i := skipSpaces(s, 0)
	start := i
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := func(j int, hex bool) int {
		for j < len(s) && (s[j] >= '0' && s[j] <= '9' || hex && (s[j]|0x20 >= 'a' && s[j]|0x20 <= 'f')) {
			j++
		}
		return j
	}
	// mantissa: digits with an optional point, at least one digit
	mantissa := func(j int, hex bool) int {
		k := digits(j, hex)
		n := k - j
		if k < len(s) && s[k] == '.' {
			k2 := digits(k+1, hex)
			n += k2 - k - 1
			k = k2
		}
		if n == 0 {
			return -1
		}
		return k
	}
	// exponent: e or p, an optional sign, at least one digit; else none
	exponent := func(j int, mark byte) int {
		if j >= len(s) || s[j]|0x20 != mark {
			return j
		}
		k := j + 1
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		if k2 := digits(k, false); k2 > k {
			return k2
		}
		return j
	}
	lower := strings.ToLower(s[i:min(len(s), i+8)])
	switch {
	case len(s) > i+1 && s[i] == '0' && s[i+1]|0x20 == 'x':
		if k := mantissa(i+2, true); k > 0 {
			end := exponent(k, 'p')
			lit := s[start:end]
			if end == k {
				lit += "p0" // Go wants the exponent
			}
			f, _ := strconv.ParseFloat(lit, 64)
			return f, end
		}
		// "0x" alone: the 0 is the number
		f, _ := strconv.ParseFloat(s[start:i+1], 64)
		return f, i + 1
	case strings.HasPrefix(lower, "infinity"):
		return signed(s[start], math.Inf(1)), i + 8
	case strings.HasPrefix(lower, "inf"):
		return signed(s[start], math.Inf(1)), i + 3
	case strings.HasPrefix(lower, "nan"):
		end := i + 3
		if end < len(s) && s[end] == '(' {
			k := end + 1
			for k < len(s) && (s[k] >= '0' && s[k] <= '9' || s[k]|0x20 >= 'a' && s[k]|0x20 <= 'z' || s[k] == '_') {
				k++
			}
			if k < len(s) && s[k] == ')' {
				end = k + 1
			}
		}
		return math.NaN(), end
	}
	k := mantissa(i, false)
	if k < 0 {
		return 0, 0
	}
	end := exponent(k, 'e')
	f, _ := strconv.ParseFloat(s[start:end], 64) // out of range: ±Inf or 0, as strtod
	return f, end
}

func signed(sign byte, f float64) float64 {
	if sign == '-' {
		return -f
	}
	return f
}

// strtoul is C's strtoul in base 2..36: the value at the start of s (after
// spaces; a sign; "0x" in base 16), wrapped modulo 2^64 when negative,
// saturated at its maximum on overflow, and the index just past it; end 0:
// no digit.
func strtoul(s string, base int) (uint64, int) {
	i := skipSpaces(s, 0)
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	digit := func(c byte) int {
		switch {
		case c >= '0' && c <= '9':
			return int(c - '0')
		case c|0x20 >= 'a' && c|0x20 <= 'z':
			return int(c|0x20-'a') + 10
		}
		return 99
	}
	if base == 16 && len(s) > i+2 && s[i] == '0' && s[i+1]|0x20 == 'x' && digit(s[i+2]) < 16 {
		i += 2
	}
	var n uint64
	over := false
	j := i
	for ; j < len(s) && digit(s[j]) < base; j++ {
		d := uint64(digit(s[j]))
		if n > (math.MaxUint64-d)/uint64(base) {
			over = true
		}
		n = n*uint64(base) + d
	}
	if j == i {
		return 0, 0
	}
	switch {
	case over:
		n = math.MaxUint64
	case neg:
		n = -n
	}
	return n, j
}

// versionNum is a "major.minor.patch" version as Redis's REDIS_VERSION_NUM:
// 0x00MMmmpp ("7.0.15" is 0x07000f, 458767).
func versionNum(v string) int {
	num := 0
	parts := strings.SplitN(v, ".", 3)
	for i := 0; i < 3; i++ {
		k := 0
		if i < len(parts) {
			k, _ = strconv.Atoi(parts[i])
		}
		num = num<<8 | k&0xff
	}
	return num
}
