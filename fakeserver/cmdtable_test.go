package fakeserver

import (
	"strings"
	"testing"
)

// propsOf names the properties of a command that dispatch, MULTI and
// scripts act on: locked (runs with the keyspace lock n.mu), nomulti (run
// at once inside MULTI, not queued), noauth (allowed before AUTH), admin
// (the FAKE command), write, noscript (refused by redis.call), allowbusy
// (served while a script is busy).
func propsOf(d *cmdDef) string {
	var p []string
	for _, x := range []struct {
		name string
		on   bool
	}{
		{"locked", !d.noLock}, {"nomulti", d.noMulti}, {"noauth", d.noAuth}, {"admin", d.admin},
		{"write", d.write}, {"noscript", d.noscript}, {"allowbusy", d.allowBusy},
	} {
		if x.on {
			p = append(p, x.name)
		}
	}
	return strings.Join(p, " ")
}

// TestCommandProperties pins every command's properties as the command
// table gives them. Every command in the table has a row here and every
// row a command.
func TestCommandProperties(t *testing.T) {
	want := map[string]string{}
	for _, r := range []struct{ name, props string }{
		{"ping", ""},
		{"echo", ""},
		{"hello", "noauth noscript allowbusy"},
		{"auth", "noauth noscript allowbusy"},
		{"select", ""},
		{"client", "noscript"},
		{"command", ""},
		{"info", "locked"},
		{"config", "noscript"},
		{"quit", "nomulti noauth noscript allowbusy"},
		{"set", "locked write"},
		{"get", "locked"},
		{"getrange", "locked"},
		{"strlen", "locked"},
		{"mget", "locked"},
		{"setnx", "locked write"},
		{"getdel", "locked write"},
		{"del", "locked write"},
		{"unlink", "locked write"},
		{"exists", "locked"},
		{"incr", "locked write"},
		{"decr", "locked write"},
		{"incrby", "locked write"},
		{"decrby", "locked write"},
		{"pexpire", "locked write"},
		{"expire", "locked write"},
		{"pexpireat", "locked write"},
		{"expireat", "locked write"},
		{"persist", "locked write"},
		{"pttl", "locked"},
		{"ttl", "locked"},
		{"type", "locked"},
		{"keys", "locked"},
		{"scan", "locked"},
		{"dbsize", "locked"},
		{"flushall", "locked write"},
		{"flushdb", "locked write"},
		{"hset", "locked write"},
		{"hmset", "locked write"},
		{"hsetnx", "locked write"},
		{"hget", "locked"},
		{"hmget", "locked"},
		{"hdel", "locked write"},
		{"hgetall", "locked"},
		{"hkeys", "locked"},
		{"hvals", "locked"},
		{"hlen", "locked"},
		{"hexists", "locked"},
		{"hincrby", "locked write"},
		{"lpush", "locked write"},
		{"rpush", "locked write"},
		{"lpop", "locked write"},
		{"rpop", "locked write"},
		{"llen", "locked"},
		{"lrange", "locked"},
		{"zadd", "locked write"},
		{"zincrby", "locked write"},
		{"zscore", "locked"},
		{"zcard", "locked"},
		{"zrem", "locked write"},
		{"zrange", "locked"},
		{"zrevrange", "locked"},
		{"publish", ""},
		{"multi", "nomulti noscript allowbusy"},
		{"exec", "nomulti noscript"},
		{"discard", "nomulti noscript allowbusy"},
		{"watch", "locked nomulti noscript allowbusy"},
		{"unwatch", "locked noscript allowbusy"},
		{"script", "locked noscript"},
		{"eval", "locked noscript"},
		{"evalsha", "locked noscript"},
		{"role", "noscript"},
		{"cluster", "noscript"},
		{"readonly", ""},
		{"readwrite", ""},
		{"asking", ""},
		{"fake", "nomulti admin noscript"},
	} {
		want[r.name] = r.props
	}
	for i := range commandTable {
		d := &commandTable[i]
		w, ok := want[d.name]
		if !ok {
			t.Errorf("%s: no row in this test", d.name)
			continue
		}
		delete(want, d.name)
		if got := propsOf(d); got != w {
			t.Errorf("%s: properties %q, want %q", d.name, got, w)
		}
	}
	for name := range want {
		t.Errorf("%s: a row for a command not in the table", name)
	}
}
