package redisproc

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// SentinelOptions shape a Sentinel-managed group (StartSentinelGroup).
type SentinelOptions struct {
	// Name is the master name the sentinels monitor; default "mymaster".
	Name string
	// Replicas started with --replicaof the primary; default 1.
	Replicas int
	// Sentinels started with redis-server <conf> --sentinel; default 3.
	Sentinels int
	// Quorum is the number of sentinels that must agree the primary is
	// down; default Sentinels/2+1.
	Quorum int
	// DownAfter is down-after-milliseconds (default 1s) and
	// FailoverTimeout failover-timeout (default 3s). A sentinel starts no
	// second failover of the same primary within 2 x FailoverTimeout.
	DownAfter, FailoverTimeout time.Duration
	// Password is the data nodes' requirepass (and masterauth, and the
	// sentinels' auth-pass). SentinelPassword is the sentinels' own
	// requirepass (and sentinel-pass between them).
	Password, SentinelPassword string
}

// SentinelGroup is a primary, its replicas and the sentinels that watch
// them, all redis-server processes on free loopback ports.
type SentinelGroup struct {
	Name string
	// Data are the data nodes: Data[0] was started as the primary, the
	// others as its replicas; after a failover another one is the primary
	// (Primary).
	Data      []*Server
	Sentinels []*Server
	opt       SentinelOptions
}

// StartSentinelGroup starts a primary, opt.Replicas replicas and
// opt.Sentinels sentinels monitoring the primary as opt.Name, and waits
// (up to 30 s) until every sentinel sees every replica and every other
// sentinel, so that a failover can run. Call Stop.
func StartSentinelGroup(opt SentinelOptions) (*SentinelGroup, error) {
	if opt.Name == "" {
		opt.Name = "mymaster"
	}
	if opt.Replicas == 0 {
		opt.Replicas = 1
	}
	if opt.Sentinels == 0 {
		opt.Sentinels = 3
	}
	if opt.Quorum == 0 {
		opt.Quorum = opt.Sentinels/2 + 1
	}
	if opt.DownAfter == 0 {
		opt.DownAfter = time.Second
	}
	if opt.FailoverTimeout == 0 {
		opt.FailoverTimeout = 3 * time.Second
	}
	g := &SentinelGroup{Name: opt.Name, opt: opt}
	// A replica's first sync starts at once (not after the default 5 s
	// wait for more replicas to share a diskless transfer).
	data := Options{Password: opt.Password, Extra: []string{"--repl-diskless-sync-delay", "0"}}
	if opt.Password != "" {
		data.Extra = append(data.Extra, "--masterauth", opt.Password)
	}
	p, err := Start(data)
	if err != nil {
		return nil, err
	}
	g.Data = append(g.Data, p)
	for i := 0; i < opt.Replicas; i++ {
		ro := data
		ro.Extra = append(append([]string(nil), data.Extra...), "--replicaof", "127.0.0.1", strconv.Itoa(p.Port))
		r, err := Start(ro)
		if err != nil {
			g.Stop()
			return nil, err
		}
		g.Data = append(g.Data, r)
	}
	for i := 0; i < opt.Sentinels; i++ {
		s, err := startSentinel(opt, p.Port)
		if err != nil {
			g.Stop()
			return nil, err
		}
		g.Sentinels = append(g.Sentinels, s)
	}
	if err := g.WaitReady(30 * time.Second); err != nil {
		g.Stop()
		return nil, err
	}
	return g, nil
}

// startSentinel starts one sentinel (redis-server <conf> --sentinel: a
// sentinel rewrites its configuration file, so it is one of its own).
func startSentinel(opt SentinelOptions, primaryPort int) (*Server, error) {
	bin := Binary()
	if bin == "" {
		return nil, errors.New("redisproc: redis-server is not installed")
	}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		dir, err := os.MkdirTemp("", "redmux-sentinel-")
		if err != nil {
			return nil, err
		}
		n := opt.Name
		conf := []string{
			"port " + strconv.Itoa(port),
			"bind 127.0.0.1",
			"protected-mode no",
			"daemonize no",
			"dir " + dir,
			`logfile ""`,
			"loglevel warning",
			fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d %d", n, primaryPort, opt.Quorum),
			fmt.Sprintf("sentinel down-after-milliseconds %s %d", n, opt.DownAfter.Milliseconds()),
			fmt.Sprintf("sentinel failover-timeout %s %d", n, opt.FailoverTimeout.Milliseconds()),
			fmt.Sprintf("sentinel parallel-syncs %s 1", n),
		}
		if opt.Password != "" {
			conf = append(conf, fmt.Sprintf("sentinel auth-pass %s %s", n, opt.Password))
		}
		if opt.SentinelPassword != "" {
			conf = append(conf, "requirepass "+opt.SentinelPassword, "sentinel sentinel-pass "+opt.SentinelPassword)
		}
		file := filepath.Join(dir, "sentinel.conf")
		if err := os.WriteFile(file, []byte(strings.Join(conf, "\n")+"\n"), 0o600); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		s, err := launch(bin, []string{file, "--sentinel"}, dir, "127.0.0.1", port, opt.SentinelPassword, nil)
		if err == nil {
			s.Sentinel = true
			return s, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

// Stop stops every process of the group.
func (g *SentinelGroup) Stop() {
	StopAll(g.Sentinels)
	StopAll(g.Data)
}

// SentinelAddrs returns the sentinels' addresses.
func (g *SentinelGroup) SentinelAddrs() []string { return Addrs(g.Sentinels) }

// WaitReady waits until every sentinel knows every other sentinel and
// every replica of the current primary, and every replica's link to the
// primary is up.
func (g *SentinelGroup) WaitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var why string
	for time.Now().Before(deadline) {
		why = g.notReady()
		if why == "" {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("redisproc: sentinel group not ready within %v: %s", timeout, why)
}

// notReady says why the group is not ready, "" when it is.
func (g *SentinelGroup) notReady() string {
	p, err := g.Primary()
	if err != nil {
		return err.Error()
	}
	for _, s := range g.Data {
		if s == p {
			continue
		}
		info, err := Command(s.Addr, g.opt.Password, "INFO", "replication")
		if err != nil {
			return fmt.Sprintf("replica %s: %v", s.Addr, err)
		}
		txt, _ := info.(string)
		if !strings.Contains(txt, "role:slave") || !strings.Contains(txt, "master_link_status:up") ||
			!strings.Contains(txt, "master_port:"+strconv.Itoa(p.Port)) {
			return fmt.Sprintf("replica %s not linked to %s", s.Addr, p.Addr)
		}
	}
	for _, s := range g.Sentinels {
		m, err := Command(s.Addr, g.opt.SentinelPassword, "SENTINEL", "MASTER", g.Name)
		if err != nil {
			return fmt.Sprintf("sentinel %s: %v", s.Addr, err)
		}
		f := fields(m)
		if f["port"] != strconv.Itoa(p.Port) || f["flags"] != "master" {
			return fmt.Sprintf("sentinel %s: master %s:%s flags %s", s.Addr, f["ip"], f["port"], f["flags"])
		}
		if f["num-other-sentinels"] != strconv.Itoa(len(g.Sentinels)-1) || f["num-slaves"] != strconv.Itoa(len(g.Data)-1) {
			return fmt.Sprintf("sentinel %s sees %s other sentinels and %s replicas", s.Addr, f["num-other-sentinels"], f["num-slaves"])
		}
		// A replica the sentinel counts as down cannot be promoted. (Its
		// view of the replica's link is refreshed by INFO every 10 s, and
		// every second once the primary is down: the replica's own INFO
		// above is what says the link is up.)
		rs, err := Command(s.Addr, g.opt.SentinelPassword, "SENTINEL", "REPLICAS", g.Name)
		if err != nil {
			return fmt.Sprintf("sentinel %s: %v", s.Addr, err)
		}
		list, _ := rs.([]any)
		for _, r := range list {
			rf := fields(r)
			if rf["flags"] != "slave" {
				return fmt.Sprintf("sentinel %s: replica %s:%s flags %s", s.Addr, rf["ip"], rf["port"], rf["flags"])
			}
		}
	}
	return ""
}

// Primary returns the data node whose ROLE is master (the only one).
func (g *SentinelGroup) Primary() (*Server, error) {
	var found *Server
	for _, s := range g.Data {
		r, err := Command(s.Addr, g.opt.Password, "ROLE")
		if err != nil {
			continue // paused or stopped
		}
		if l, ok := r.([]any); ok && len(l) > 0 && l[0] == "master" {
			if found != nil {
				return nil, fmt.Errorf("redisproc: two primaries, %s and %s", found.Addr, s.Addr)
			}
			found = s
		}
	}
	if found == nil {
		return nil, errors.New("redisproc: no data node answers ROLE master")
	}
	return found, nil
}

// WaitFailover waits until every sentinel names a primary other than old
// (by GET-MASTER-ADDR-BY-NAME) and that server answers ROLE master; it
// returns it.
func (g *SentinelGroup) WaitFailover(old *Server, timeout time.Duration) (*Server, error) {
	deadline := time.Now().Add(timeout)
	why := "not tried"
	for time.Now().Before(deadline) {
		why = ""
		var named string
		for _, s := range g.Sentinels {
			r, err := Command(s.Addr, g.opt.SentinelPassword, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", g.Name)
			l, _ := r.([]any)
			if err != nil || len(l) != 2 {
				why = fmt.Sprintf("sentinel %s: %v %v", s.Addr, r, err)
				break
			}
			a := net.JoinHostPort(fmt.Sprint(l[0]), fmt.Sprint(l[1]))
			if a == old.Addr || (named != "" && a != named) {
				why = fmt.Sprintf("sentinel %s names %s", s.Addr, a)
				break
			}
			named = a
		}
		if why == "" {
			for _, d := range g.Data {
				if d.Addr != named {
					continue
				}
				r, err := Command(d.Addr, g.opt.Password, "ROLE")
				if l, ok := r.([]any); err == nil && ok && len(l) > 0 && l[0] == "master" {
					return d, nil
				}
				why = fmt.Sprintf("%s named but answers ROLE %v %v", named, r, err)
			}
			if why == "" {
				why = "named " + named + ", no data node of the group"
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil, fmt.Errorf("redisproc: no failover from %s within %v: %s", old.Addr, timeout, why)
}

// WaitNamed waits (up to timeout) until every sentinel of among names
// one primary other than old (by GET-MASTER-ADDR-BY-NAME, polled every
// 10 ms), and returns it and when they first agreed. Unlike
// WaitFailover it asks only among (leave out a sentinel that hangs) and
// does not ask the primary its ROLE.
func (g *SentinelGroup) WaitNamed(among []*Server, old *Server, timeout time.Duration) (string, time.Time, error) {
	for end := time.Now().Add(timeout); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		named, agree := "", true
		for _, s := range among {
			r, err := Command(s.Addr, g.opt.SentinelPassword, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", g.Name)
			l, _ := r.([]any)
			if err != nil || len(l) != 2 {
				agree = false
				break
			}
			a := net.JoinHostPort(fmt.Sprint(l[0]), fmt.Sprint(l[1]))
			if a == old.Addr || (named != "" && a != named) {
				agree = false
				break
			}
			named = a
		}
		if agree {
			return named, time.Now(), nil
		}
	}
	return "", time.Time{}, fmt.Errorf("redisproc: %s: the sentinels never named another primary than %s within %v", g.Name, old.Addr, timeout)
}

// Rejoin resumes old, a primary paused before a failover to primary, and
// makes it primary's replica at once (REPLICAOF), as the sentinels do
// when they next look at it (their INFO to it runs every 10 s, so the old
// primary, resumed, answers as a primary that long), then waits for the
// group to be ready again.
func (g *SentinelGroup) Rejoin(old, primary *Server, timeout time.Duration) error {
	if err := old.Resume(); err != nil {
		return err
	}
	if _, err := Command(old.Addr, g.opt.Password, "REPLICAOF", "127.0.0.1", strconv.Itoa(primary.Port)); err != nil {
		return fmt.Errorf("redisproc: REPLICAOF on %s: %w", old.Addr, err)
	}
	return g.WaitReady(timeout)
}

// fields turns a flat [k1 v1 k2 v2 ...] reply into a map.
func fields(r any) map[string]string {
	l, _ := r.([]any)
	m := make(map[string]string, len(l)/2)
	for i := 0; i+1 < len(l); i += 2 {
		m[fmt.Sprint(l[i])] = fmt.Sprint(l[i+1])
	}
	return m
}

// Command sends one command (after AUTH password, when set) to addr and
// returns its RESP2 reply: a string (simple or bulk), an int64, nil, a
// []any, or an error for an error reply. It takes at most 2 s.
func Command(addr, password string, args ...string) (any, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	var b strings.Builder
	put := func(a ...string) {
		fmt.Fprintf(&b, "*%d\r\n", len(a))
		for _, s := range a {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(s), s)
		}
	}
	if password != "" {
		put("AUTH", password)
	}
	put(args...)
	if _, err := c.Write([]byte(b.String())); err != nil {
		return nil, err
	}
	r := bufio.NewReader(c)
	if password != "" {
		v, err := readReply(r, 0)
		if err != nil {
			return nil, err
		}
		if e, ok := v.(error); ok {
			return nil, e
		}
	}
	v, err := readReply(r, 0)
	if err != nil {
		return nil, err
	}
	if e, ok := v.(error); ok {
		return nil, e
	}
	return v, nil
}

// readReply reads one RESP2 reply (an error reply is returned as the
// value, not the error).
func readReply(r *bufio.Reader, depth int) (any, error) {
	if depth > 8 {
		return nil, errors.New("redisproc: reply nested too deep")
	}
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return nil, errors.New("redisproc: empty reply line")
	}
	body := line[1:]
	switch line[0] {
	case '+':
		return body, nil
	case '-':
		return errors.New(body), nil
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil || n > 64<<20 {
			return nil, fmt.Errorf("redisproc: bad bulk length %q", body)
		}
		if n < 0 {
			return nil, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil || n > 1<<20 {
			return nil, fmt.Errorf("redisproc: bad array length %q", body)
		}
		if n < 0 {
			return nil, nil
		}
		out := make([]any, n)
		for i := range out {
			if out[i], err = readReply(r, depth+1); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("redisproc: unexpected reply %q", line)
}
