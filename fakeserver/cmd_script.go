package fakeserver

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"

	"github.com/redmux/redmux/redlock/scripts"
)

// EVAL, EVALSHA and SCRIPT. Their bodies run with n.mu held, so a script
// is atomic. Scripts run in Lua (lua.go), except redmux's own two lock
// scripts (package redlock/scripts), which run natively unless
// Config.LuaOnly is set: the native versions are faster
// (BenchmarkLockPath: lock cycle 5.1 us native vs 13.9 us in Lua, 6 vs 41
// allocs, shared 2-core machine) and give byte-identical replies, errors included
// (TestNativeScriptsMatchLua).

// nativeScript executes one known Lua script natively.
type nativeScript struct {
	script scripts.Script
	run    func(n *Node, c cmdCtx, keys, argv [][]byte)
}

// knownScripts maps a script's SHA1 to its native implementation.
var knownScripts = map[string]*nativeScript{}

func init() {
	for _, s := range []*nativeScript{
		{script: scripts.Release, run: runRelease},
		{script: scripts.Extend, run: runExtend},
	} {
		knownScripts[s.script.SHA] = s
	}
}

func scriptErr(c cmdCtx, msg string, sha string, line string) {
	c.err(msg + " script: " + sha + ", on @user_script:" + line + ".")
}

const luaArgErr = "ERR Lua redis lib command arguments must be strings or integers"

// runRelease: if redis.call("get",KEYS[1]) == ARGV[1] then return
// redis.call("del",KEYS[1]) else return 0 end
func runRelease(n *Node, c cmdCtx, keys, argv [][]byte) {
	sha := scripts.Release.SHA
	if len(keys) < 1 {
		scriptErr(c, luaArgErr, sha, "1")
		return
	}
	e, ok := n.lookup(c.fc.db, string(keys[0]), n.nowLocked())
	if ok && e.kind != kindString {
		scriptErr(c, wrongType, sha, "1")
		return
	}
	r := 0
	if ok && len(argv) >= 1 && bytes.Equal(e.val, argv[0]) {
		n.remove(c.fc.db, string(keys[0]))
		r = 1
	}
	c.rc.WriteInt(r)
}

// runExtend is scripts.Extend: if the value matches, PEXPIRE ARGV[2],
// then put the old expiry back if the key had longer to live (never
// shorten); reply 1, else 0.
func runExtend(n *Node, c cmdCtx, keys, argv [][]byte) {
	sha := scripts.Extend.SHA
	if len(keys) < 1 {
		scriptErr(c, luaArgErr, sha, "1")
		return
	}
	key := string(keys[0])
	now := n.nowLocked()
	e, ok := n.lookup(c.fc.db, key, now)
	if ok && e.kind != kindString {
		scriptErr(c, wrongType, sha, "1")
		return
	}
	if !ok || len(argv) < 1 || !bytes.Equal(e.val, argv[0]) {
		c.rc.WriteInt(0)
		return
	}
	left := int64(-1) // PTTL before
	if e.exp != 0 {
		left = max(e.exp-nowMs(now), 0)
	}
	if len(argv) < 2 {
		scriptErr(c, luaArgErr, sha, "3")
		return
	}
	ms, okInt := parseInt(argv[1])
	if !okInt {
		scriptErr(c, "ERR value is not an integer or out of range", sha, "3")
		return
	}
	if _, errText := n.expireLocked(c.fc.db, key, ms, false, false, 0, "pexpire"); errText != "" {
		scriptErr(c, errText, sha, "3")
		return
	}
	//mutant:extend-may-shorten
	if left > 0 {
		now = n.nowLocked()
		if e, ok := n.lookup(c.fc.db, key, now); ok && e.exp != 0 && e.exp-nowMs(now) < left {
			_, _ = n.expireLocked(c.fc.db, key, left, false, false, 0, "pexpire")
		}
	}
	c.rc.WriteInt(1)
}

func sha1Hex(b []byte) string {
	s := sha1.Sum(b)
	return hex.EncodeToString(s[:])
}

// lowerSHA lower-cases a 40-character hex SHA into buf, as Redis compares
// them case-insensitively.
func lowerSHA(b []byte, buf *[40]byte) bool {
	if len(b) != 40 {
		return false
	}
	for i, ch := range b {
		if ch >= 'A' && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		buf[i] = ch
	}
	return true
}

func cmdScript(n *Node, c cmdCtx) {
	sub := c.args[1]
	switch {
	case eqFold(sub, "load"):
		if len(c.args) != 3 {
			c.subArity("load")
			return
		}
		sha := sha1Hex(c.args[2])
		if _, ok := n.compileScript(c, sha, c.args[2]); !ok {
			return
		}
		c.rc.WriteBulkString(sha)
	case eqFold(sub, "exists"):
		if len(c.args) < 3 {
			c.subArity("exists")
			return
		}
		c.rc.WriteArray(len(c.args) - 2)
		for _, s := range c.args[2:] {
			var buf [40]byte
			loaded := false
			if lowerSHA(s, &buf) {
				_, loaded = n.scripts[string(buf[:])]
			}
			if loaded {
				c.rc.WriteInt(1)
			} else {
				c.rc.WriteInt(0)
			}
		}
	case eqFold(sub, "flush"):
		if len(c.args) > 3 || (len(c.args) == 3 && !eqFold(c.args[2], "async") && !eqFold(c.args[2], "sync")) {
			c.err("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
			return
		}
		n.scripts = make(map[string]string)
		n.resetLua()
		c.ok()
	case eqFold(sub, "kill"):
		if len(c.args) != 2 {
			c.subArity("kill")
			return
		}
		c.err("NOTBUSY No scripts in execution right now.")
	default:
		c.unknownSub("SCRIPT")
	}
}

// evalKeys parses numkeys and splits keys and args, replying with Redis's
// errors on bad input.
func evalKeys(c cmdCtx) (keys, argv [][]byte, ok bool) {
	nk, good := parseInt(c.args[2])
	if !good {
		c.notInt()
		return nil, nil, false
	}
	if nk > int64(len(c.args)-3) {
		c.err("ERR Number of keys can't be greater than number of args")
		return nil, nil, false
	}
	if nk < 0 {
		c.err("ERR Number of keys can't be negative")
		return nil, nil, false
	}
	return c.args[3 : 3+nk], c.args[3+nk:], true
}

func cmdEval(n *Node, c cmdCtx) {
	keys, argv, ok := evalKeys(c)
	if !ok {
		return
	}
	sha := sha1Hex(c.args[1])
	if s := knownScripts[sha]; s != nil && !n.cfg.LuaOnly {
		n.scripts[sha] = string(c.args[1]) // EVAL caches the script, as Redis does
		s.run(n, c, keys, argv)
		return
	}
	f, ok := n.compileScript(c, sha, c.args[1])
	if !ok {
		return
	}
	n.runScript(c, sha, f, keys, argv)
}

const noScript = "NOSCRIPT No matching script. Please use EVAL."

func cmdEvalSHA(n *Node, c cmdCtx) {
	if len(c.args[1]) != 40 { // checked before numkeys, as Redis does
		c.err(noScript)
		return
	}
	keys, argv, ok := evalKeys(c)
	if !ok {
		return
	}
	var buf [40]byte
	lowerSHA(c.args[1], &buf)
	body, loaded := n.scripts[string(buf[:])]
	if !loaded {
		c.err(noScript)
		return
	}
	if s := knownScripts[string(buf[:])]; s != nil && !n.cfg.LuaOnly {
		s.run(n, c, keys, argv)
		return
	}
	sha := string(buf[:])
	f, ok := n.compileScript(c, sha, []byte(body))
	if !ok {
		return
	}
	n.runScript(c, sha, f, keys, argv)
}
