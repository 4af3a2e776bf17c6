package fakeserver

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"

	"github.com/redmux/redmux/redlock/scripts"
)

// nativeScript executes one known Lua script natively.
type nativeScript struct {
	script scripts.Script
	run    func(n *Node, c cmdCtx, keys, argv [][]byte)
}

// knownScripts maps a script's SHA1 to its native implementation. Every
// script in scripts.All must be here (a test checks it).
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
	if len(keys) < 1 {
		scriptErr(c, luaArgErr, scripts.Release.SHA, "1")
		return
	}
	r := 0
	n.mu.Lock()
	e, ok := n.lookup(c.fc.db, string(keys[0]), n.nowLocked())
	if ok && len(argv) >= 1 && bytes.Equal(e.val, argv[0]) {
		delete(n.dbs[c.fc.db], string(keys[0]))
		r = 1
	}
	n.mu.Unlock()
	c.rc.WriteInt(r)
}

// runExtend: if redis.call("get",KEYS[1]) == ARGV[1] then return
// redis.call("pexpire",KEYS[1],ARGV[2]) else return 0 end
// The compare and the pexpire happen under one lock, atomically, as a
// script does in Redis.
func runExtend(n *Node, c cmdCtx, keys, argv [][]byte) {
	sha := scripts.Extend.SHA
	if len(keys) < 1 {
		scriptErr(c, luaArgErr, sha, "1")
		return
	}
	key := string(keys[0])
	n.mu.Lock()
	e, ok := n.lookup(c.fc.db, key, n.nowLocked())
	if !ok || len(argv) < 1 || !bytes.Equal(e.val, argv[0]) {
		n.mu.Unlock()
		c.rc.WriteInt(0)
		return
	}
	if len(argv) < 2 {
		n.mu.Unlock()
		scriptErr(c, luaArgErr, sha, "2")
		return
	}
	ms, okInt := parseInt(argv[1])
	if !okInt {
		n.mu.Unlock()
		scriptErr(c, "ERR value is not an integer or out of range", sha, "2")
		return
	}
	r, errText := n.expireLocked(c.fc.db, key, ms, false, 0, "pexpire")
	n.mu.Unlock()
	if errText != "" {
		scriptErr(c, errText, sha, "2")
		return
	}
	c.rc.WriteInt(r)
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

func unsupportedScript(c cmdCtx, sha string) {
	c.err("ERR fake server: unsupported script (sha1 " + sha + "): this fake Redis does not run arbitrary Lua, only the redlock scripts (release, extend) natively")
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
		if knownScripts[sha] == nil {
			unsupportedScript(c, sha)
			return
		}
		n.mu.Lock()
		n.scripts[sha] = true
		n.mu.Unlock()
		c.rc.WriteBulkString(sha)
	case eqFold(sub, "exists"):
		if len(c.args) < 3 {
			c.subArity("exists")
			return
		}
		c.rc.WriteArray(len(c.args) - 2)
		n.mu.Lock()
		for _, s := range c.args[2:] {
			var buf [40]byte
			if lowerSHA(s, &buf) && n.scripts[string(buf[:])] {
				c.rc.WriteInt(1)
			} else {
				c.rc.WriteInt(0)
			}
		}
		n.mu.Unlock()
	case eqFold(sub, "flush"):
		if len(c.args) > 3 || (len(c.args) == 3 && !eqFold(c.args[2], "async") && !eqFold(c.args[2], "sync")) {
			c.err("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
			return
		}
		n.mu.Lock()
		n.scripts = make(map[string]bool)
		n.mu.Unlock()
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
	s := knownScripts[sha]
	if s == nil {
		unsupportedScript(c, sha)
		return
	}
	n.mu.Lock()
	n.scripts[sha] = true // EVAL caches the script, as Redis does
	n.mu.Unlock()
	s.run(n, c, keys, argv)
}

func cmdEvalSHA(n *Node, c cmdCtx) {
	if len(c.args[1]) != 40 { // checked before numkeys, as Redis does
		c.err("NOSCRIPT No matching script. Please use EVAL.")
		return
	}
	keys, argv, ok := evalKeys(c)
	if !ok {
		return
	}
	var buf [40]byte
	var s *nativeScript
	if lowerSHA(c.args[1], &buf) {
		n.mu.Lock()
		if n.scripts[string(buf[:])] {
			s = knownScripts[string(buf[:])]
		}
		n.mu.Unlock()
	}
	if s == nil {
		c.err("NOSCRIPT No matching script. Please use EVAL.")
		return
	}
	s.run(n, c, keys, argv)
}
