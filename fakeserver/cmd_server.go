package fakeserver

import (
	"net"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Version is the Redis version the fake reports (HELLO, INFO). Its replies
// were checked byte for byte against this version of redis-server.
const Version = "7.0.15"

func cmdPing(n *Node, c cmdCtx) {
	switch len(c.args) {
	case 1:
		c.rc.WriteString("PONG")
	case 2:
		c.rc.WriteBulk(c.args[1])
	default:
		c.err("ERR wrong number of arguments for 'ping' command")
	}
}

func cmdEcho(n *Node, c cmdCtx) { c.rc.WriteBulk(c.args[1]) }

// cmdPublish: the fake has no pub/sub, so no client is ever subscribed
// (Redisson's unlock script publishes an unlock message).
func cmdPublish(n *Node, c cmdCtx) { c.rc.WriteInt(0) }

func cmdQuit(n *Node, c cmdCtx) {
	c.ok()
	_ = c.rc.Close()
}

func cmdSelect(n *Node, c cmdCtx) {
	v, ok := parseInt(c.args[1])
	if !ok {
		c.notInt()
		return
	}
	if v != 0 && n.shard.Load() != nil {
		c.err("ERR SELECT is not allowed in cluster mode")
		return
	}
	if v < 0 || v >= numDBs {
		c.err("ERR DB index is out of range")
		return
	}
	c.fc.db = int(v)
	c.ok()
}

// checkAuth verifies user/pass. The one-argument AUTH passes "default";
// an empty user name is a user that does not exist, as in Redis ("HELLO 3
// AUTH "" pw" and "AUTH "" pw" answer WRONGPASS).
func (n *Node) checkAuth(user, pass string) bool {
	if user == "default" {
		if n.cfg.Password == "" {
			if p, ok := n.cfg.Users["default"]; ok {
				return p == pass
			}
			return true // nopass default user
		}
		return pass == n.cfg.Password
	}
	p, ok := n.cfg.Users[user]
	return ok && user != "" && p == pass
}

const wrongPass = "WRONGPASS invalid username-password pair or user is disabled."

func cmdAuth(n *Node, c cmdCtx) {
	switch len(c.args) {
	case 2:
		if n.cfg.Password == "" {
			if _, ok := n.cfg.Users["default"]; !ok {
				c.err("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
				return
			}
		}
		if !n.checkAuth("default", string(c.args[1])) {
			c.err(wrongPass)
			return
		}
		c.fc.authed, c.fc.user = true, "default"
	case 3:
		if !n.checkAuth(string(c.args[1]), string(c.args[2])) {
			c.err(wrongPass)
			return
		}
		c.fc.authed, c.fc.user = true, string(c.args[1])
	default:
		c.syntaxErr()
		return
	}
	c.ok()
}

func validClientName(b []byte) bool {
	for _, ch := range b {
		if ch < '!' || ch > '~' {
			return false
		}
	}
	return true
}

const badClientName = "ERR Client names cannot contain spaces, newlines or special characters."

func cmdHello(n *Node, c cmdCtx) {
	ver := int64(c.fc.proto)
	a := c.args
	if len(a) >= 2 {
		v, ok := parseInt(a[1])
		if !ok {
			c.err("ERR Protocol version is not an integer or out of range")
			return
		}
		if v < 2 || v > 3 {
			c.err("NOPROTO unsupported protocol version")
			return
		}
		ver = v
	}
	var user, pass, name []byte
	hasAuth, hasName := false, false
	for j := 2; j < len(a); j++ {
		more := len(a) - j - 1
		switch {
		case eqFold(a[j], "auth") && more >= 2:
			hasAuth = true
			user, pass = a[j+1], a[j+2]
			j += 2
		case eqFold(a[j], "setname") && more >= 1:
			hasName = true
			name = a[j+1]
			j++
		default:
			c.err("ERR Syntax error in HELLO option '" + trunc(a[j], 128) + "'")
			return
		}
	}
	if hasAuth {
		if !n.checkAuth(string(user), string(pass)) {
			c.err(wrongPass)
			return
		}
		c.fc.authed, c.fc.user = true, string(user)
	}
	if !c.fc.authed {
		c.err("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
		return
	}
	if hasName {
		if !validClientName(name) {
			c.err(badClientName)
			return
		}
		c.fc.name = string(name)
	}
	c.fc.proto = int(ver)
	c.mapHeader(7)
	c.rc.WriteBulkString("server")
	c.rc.WriteBulkString("redis")
	c.rc.WriteBulkString("version")
	c.rc.WriteBulkString(Version)
	c.rc.WriteBulkString("proto")
	c.rc.WriteInt64(ver)
	c.rc.WriteBulkString("id")
	c.rc.WriteInt64(c.fc.id)
	c.rc.WriteBulkString("mode")
	c.rc.WriteBulkString(n.mode())
	c.rc.WriteBulkString("role")
	c.rc.WriteBulkString("master")
	c.rc.WriteBulkString("modules")
	c.rc.WriteArray(0)
}

func cmdClient(n *Node, c cmdCtx) {
	sub := c.args[1]
	switch {
	case eqFold(sub, "id"):
		if len(c.args) != 2 {
			c.subArity("id")
			return
		}
		c.rc.WriteInt64(c.fc.id)
	case eqFold(sub, "getname"):
		if len(c.args) != 2 {
			c.subArity("getname")
			return
		}
		if c.fc.name == "" {
			c.null()
			return
		}
		c.rc.WriteBulkString(c.fc.name)
	case eqFold(sub, "setname"):
		if len(c.args) != 3 {
			c.subArity("setname")
			return
		}
		if !validClientName(c.args[2]) {
			c.err(badClientName)
			return
		}
		c.fc.name = string(c.args[2])
		c.ok()
	case eqFold(sub, "tracking"):
		n.clientTracking(c)
	case eqFold(sub, "info"):
		if len(c.args) != 2 {
			c.subArity("info")
			return
		}
		c.verbatim(n.clientLine(c.fc, "client|info"))
	case eqFold(sub, "list"):
		n.connMu.Lock()
		list := make([]*fconn, 0, len(n.conns))
		for fc := range n.conns {
			list = append(list, fc)
		}
		n.connMu.Unlock()
		sort.Slice(list, func(i, j int) bool { return list[i].id < list[j].id })
		var b strings.Builder
		for _, fc := range list {
			if fc == c.fc {
				b.WriteString(n.clientLine(fc, "client|list"))
			} else {
				b.WriteString(n.clientLineOther(fc))
			}
		}
		c.verbatim(b.String())
	default:
		c.unknownSub("CLIENT")
	}
}

func (n *Node) clientLine(fc *fconn, cmd string) string {
	return "id=" + strconv.FormatInt(fc.id, 10) +
		" addr=" + fc.RemoteAddr().String() +
		" laddr=" + fc.LocalAddr().String() +
		" fd=0 name=" + fc.name +
		" age=" + strconv.FormatInt(int64(time.Since(fc.created)/time.Second), 10) +
		" idle=0 flags=N db=" + strconv.Itoa(fc.db) +
		" sub=0 psub=0 ssub=0 multi=-1 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd=" + cmd + " user=" + fc.user +
		" redir=-1 resp=" + strconv.Itoa(fc.proto) + "\n"
}

// clientLineOther describes another connection; its per-client fields are
// owned by that connection's goroutine, so only immutable ones are shown.
func (n *Node) clientLineOther(fc *fconn) string {
	return "id=" + strconv.FormatInt(fc.id, 10) +
		" addr=" + fc.RemoteAddr().String() +
		" laddr=" + fc.LocalAddr().String() +
		" fd=0 age=" + strconv.FormatInt(int64(time.Since(fc.created)/time.Second), 10) + " flags=N\n"
}

func cmdConfig(n *Node, c cmdCtx) {
	sub := c.args[1]
	switch {
	case eqFold(sub, "get"):
		if len(c.args) < 3 {
			c.subArity("get")
			return
		}
		var pairs [][2]string
		for _, p := range c.args[2:] {
			for _, kv := range configValues {
				if globMatch([]byte(strings.ToLower(string(p))), []byte(kv[0])) {
					pairs = append(pairs, kv)
				}
			}
		}
		c.mapHeader(len(pairs))
		for _, kv := range pairs {
			c.rc.WriteBulkString(kv[0])
			c.rc.WriteBulkString(kv[1])
		}
	case eqFold(sub, "set"), eqFold(sub, "resetstat"), eqFold(sub, "rewrite"):
		c.err("ERR fake server: CONFIG " + strings.ToUpper(string(sub)) + " is not supported")
	default:
		c.unknownSub("CONFIG")
	}
}

// configValues answers CONFIG GET for the parameters tools such as
// redis-benchmark ask for.
var configValues = [][2]string{
	{"appendonly", "no"},
	{"databases", "16"},
	{"maxclients", "10000"},
	{"maxmemory", "0"},
	{"save", ""},
	{"timeout", "0"},
}

// visibleCommands lists the command table minus FAKE when it is disabled.
func (n *Node) visibleCommands() []*cmdDef {
	out := make([]*cmdDef, 0, len(commandTable))
	for i := range commandTable {
		if commandTable[i].admin && n.cfg.DisableAdmin {
			continue
		}
		out = append(out, &commandTable[i])
	}
	return out
}

func cmdCommand(n *Node, c cmdCtx) {
	if len(c.args) == 1 {
		list := n.visibleCommands()
		c.rc.WriteArray(len(list))
		for _, d := range list {
			writeCommandInfo(c, d)
		}
		return
	}
	sub := c.args[1]
	switch {
	case eqFold(sub, "count"):
		if len(c.args) != 2 {
			c.subArity("count")
			return
		}
		c.rc.WriteInt(len(n.visibleCommands()))
	case eqFold(sub, "info"):
		c.rc.WriteArray(len(c.args) - 2)
		for _, name := range c.args[2:] {
			i := lookupCmd(name)
			if i < 0 || (commandTable[i].admin && n.cfg.DisableAdmin) {
				c.nullArray()
				continue
			}
			writeCommandInfo(c, &commandTable[i])
		}
	case eqFold(sub, "list"):
		list := n.visibleCommands()
		c.rc.WriteArray(len(list))
		for _, d := range list {
			c.rc.WriteBulkString(d.name)
		}
	case eqFold(sub, "docs"):
		// No documentation: redis-cli then falls back to its built-in hints.
		c.mapHeader(0)
	default:
		c.unknownSub("COMMAND")
	}
}

// writeCommandInfo writes the 10-element COMMAND INFO entry of Redis 7.
func writeCommandInfo(c cmdCtx, d *cmdDef) {
	c.rc.WriteArray(10)
	c.rc.WriteBulkString(d.name)
	c.rc.WriteInt(d.arity)
	c.setHeader(len(d.flags))
	for _, f := range d.flags {
		c.rc.WriteString(f)
	}
	c.rc.WriteInt(d.first)
	c.rc.WriteInt(d.last)
	c.rc.WriteInt(d.step)
	c.setHeader(0) // ACL categories
	c.setHeader(0) // tips
	c.setHeader(0) // key specs
	c.setHeader(0) // subcommands
}

func cmdInfo(n *Node, c cmdCtx) {
	if n.infoRefused.Load() {
		c.err(infoRefusedErr)
		return
	}
	all := len(c.args) == 1
	want := map[string]bool{}
	for _, a := range c.args[1:] {
		s := strings.ToLower(string(a))
		switch s {
		case "all", "everything":
			want["server"], want["clients"], want["keyspace"], want["commandstats"], want["stats"], want["replication"], want["cluster"] = true, true, true, true, true, true, true
		case "default":
			all = true
		default:
			want[s] = true
		}
	}
	if all {
		want["server"], want["clients"], want["keyspace"], want["stats"], want["replication"], want["cluster"] = true, true, true, true, true, true
	}
	var b strings.Builder
	section := func(name string, body func()) {
		if !want[strings.ToLower(name)] {
			return
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString("# " + name + "\r\n")
		body()
	}
	line := func(k, v string) { b.WriteString(k + ":" + v + "\r\n") }
	section("Server", func() {
		line("redis_version", Version)
		line("redis_mode", n.mode())
		line("fake_server", "redmux-fakeserver")
		line("os", runtime.GOOS+" "+runtime.GOARCH)
		line("arch_bits", "64")
		line("process_id", strconv.Itoa(os.Getpid()))
		_, port, _ := net.SplitHostPort(n.addr)
		line("tcp_port", port)
		n.infoServerLife(line)
	})
	section("Clients", func() {
		line("connected_clients", strconv.FormatInt(n.stats.current.Load(), 10))
		line("maxclients", strconv.Itoa(n.cfg.MaxClients))
		line("blocked_clients", "0")
	})
	section("Replication", func() { n.infoReplication(line) })
	section("Stats", func() {
		line("total_connections_received", strconv.FormatInt(n.stats.accepted.Load(), 10))
		line("rejected_connections", strconv.FormatInt(n.stats.rejected.Load(), 10))
		line("total_commands_processed", strconv.FormatInt(n.stats.commands.Load(), 10))
		line("expired_keys", strconv.FormatInt(n.stats.expired.Load(), 10))
	})
	section("Commandstats", func() {
		for i := range commandTable {
			st := &n.cmdStats[i]
			calls := st.calls.Load()
			if calls == 0 {
				continue
			}
			line("cmdstat_"+commandTable[i].name, "calls="+strconv.FormatInt(calls, 10)+
				",usec=0,usec_per_call=0.00,rejected_calls="+strconv.FormatInt(st.rejected.Load(), 10)+
				",failed_calls="+strconv.FormatInt(st.failed.Load(), 10))
		}
	})
	section("Cluster", func() {
		if n.shard.Load() != nil {
			line("cluster_enabled", "1")
		} else {
			line("cluster_enabled", "0")
		}
	})
	section("Keyspace", func() {
		now := n.nowLocked()
		for db := range n.dbs {
			keys, exp := 0, 0
			for _, e := range n.dbs[db] {
				if e.exp != 0 && e.exp < now/1e6 {
					continue
				}
				keys++
				if e.exp != 0 {
					exp++
				}
			}
			if keys > 0 {
				line("db"+strconv.Itoa(db), "keys="+strconv.Itoa(keys)+",expires="+strconv.Itoa(exp)+",avg_ttl=0")
			}
		}
	})
	c.verbatim(b.String())
}

// clientTracking is CLIENT TRACKING ON|OFF [OPTIN]: the fake tracks no
// key (OPTIN without CLIENT CACHING tracks none in Redis either); what it
// keeps of tracking is the invalidation of every key a flush sends
// (flushPush). The other options (REDIRECT, BCAST, PREFIX, OPTOUT,
// NOLOOP) name key tracking, which the fake does not do: refused.
func (n *Node) clientTracking(c cmdCtx) {
	if n.trackingRefused.Load() {
		c.err("NOPERM this user has no permissions to run the 'client|tracking' command")
		return
	}
	if len(c.args) < 3 {
		c.subArity("tracking")
		return
	}
	on := eqFold(c.args[2], "on")
	if !on && !eqFold(c.args[2], "off") {
		c.err("ERR syntax error")
		return
	}
	for _, o := range c.args[3:] {
		if !eqFold(o, "optin") {
			c.err("ERR the fake server tracks no keys: CLIENT TRACKING takes ON|OFF [OPTIN] only, not " + trunc(o, 64))
			return
		}
	}
	if on && !c.fc.tracking {
		c.fc.flushSeen = n.flushGen.Load()
	}
	c.fc.tracking = on
	c.ok()
}
