package mux

import (
	"bytes"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/redmux/redmux/internal/nodeaddr"
	"github.com/redmux/redmux/resp"
)

// setupStep is one command of the connection set-up pipeline.
type setupStep struct {
	name  string // for errors: AUTH, HELLO, SELECT, CLIENT SETNAME, SCRIPT LOAD
	auth  bool   // an error here is an authentication failure
	sha   string // SCRIPT LOAD: the SHA the reply must equal
	info  int    // INFO (infoServer, infoReplication): read into the incarnation; an error reply is no failure
	role  bool   // ROLE (a Sentinel node): the process must answer master
	soft  bool   // an error reply is no failure (Config.WatchFlushes' steps)
	watch bool   // CLIENT TRACKING: its success is the incarnation's WatchesFlushes
}

// setupRW is the blocking-with-deadline I/O the set-up runs on.
type setupRW interface {
	write(b []byte, deadline time.Time) error
	read(b []byte, deadline time.Time) (int, error)
}

// pipeline builds node i's set-up commands, all written in one go. The
// credentials, protocol, db and name are the node's own (its URL's, else
// the Config's).
func (r *resolved) pipeline(i int) ([]byte, []setupStep) {
	ns := &r.nodes[i]
	var b []byte
	var steps []setupStep
	if ns.password != "" {
		if ns.username != "" {
			b = resp.AppendCommand(b, "AUTH", ns.username, ns.password)
		} else {
			b = resp.AppendCommand(b, "AUTH", ns.password)
		}
		steps = append(steps, setupStep{name: "AUTH", auth: true})
	}
	if ns.resp3 || r.WatchFlushes {
		// asked for, or for the flush watch: soft (a server without
		// HELLO keeps RESP2, and the watch is off)
		b = resp.AppendCommand(b, "HELLO", "3")
		steps = append(steps, setupStep{name: "HELLO 3", soft: !ns.resp3})
	}
	if r.WatchFlushes {
		b = resp.AppendCommand(b, "CLIENT", "TRACKING", "ON", "OPTIN")
		steps = append(steps, setupStep{name: "CLIENT TRACKING", soft: true, watch: true})
	}
	if ns.db > 0 {
		b = resp.AppendCommand(b, "SELECT", strconv.Itoa(ns.db))
		steps = append(steps, setupStep{name: "SELECT"})
	}
	if ns.checksRole() {
		// the sentinels' answer or the slot map may be stale: the process
		// says what it is
		b = resp.AppendCommand(b, "ROLE")
		steps = append(steps, setupStep{name: "ROLE", role: true})
	}
	b = resp.AppendCommand(b, "CLIENT", "SETNAME", ns.clientName)
	steps = append(steps, setupStep{name: "CLIENT SETNAME"})
	for _, s := range r.Scripts {
		b = resp.AppendCommand(b, "SCRIPT", "LOAD", s.Text)
		steps = append(steps, setupStep{name: "SCRIPT LOAD", sha: s.SHA})
	}
	if r.Incarnations {
		// two commands: Redis before 7.0 takes one section per INFO
		b = resp.AppendCommand(b, "INFO", "server")
		b = resp.AppendCommand(b, "INFO", "replication")
		steps = append(steps, setupStep{name: "INFO server", info: infoServer}, setupStep{name: "INFO replication", info: infoReplication})
	}
	return b, steps
}

// runSetup writes node i's set-up pipeline and checks every reply. Push
// frames (RESP3 out-of-band data) anywhere are skipped: those read past the
// last set-up reply, the last one possibly incomplete, are returned for the
// connection's reader, which skips them too. Any other byte past the last
// set-up reply is an error: nothing was asked for it, and matched to the
// first command it would shift every reply after it. With Incarnations on,
// the node's incarnation is read from the INFO replies and stored (r.learn)
// before runSetup returns, so before the connection carries a command.
func runSetup(rw setupRW, r *resolved, i, shard int, deadline time.Time) ([]byte, error) {
	cmds, steps := r.pipeline(i)
	var inc Incarnation
	password, secrets := r.nodes[i].password, r.nodes[i].secrets()
	if err := rw.write(cmds, deadline); err != nil {
		return nil, &setupError{step: "write", text: err.Error(), io: err}
	}
	max := r.MaxReplyBytes
	if max <= 0 {
		max = DefaultMaxReplyBytes
	}
	buf := make([]byte, 0, min(4096, max))
	off, step := 0, 0
	resp2 := false // a soft HELLO 3 was refused
	for step < len(steps) {
		for step < len(steps) {
			rep, n, err := r.Parser.Parse(buf[off:])
			if err == resp.ErrIncomplete {
				break
			}
			if err != nil {
				return nil, &setupError{step: steps[step].name, text: err.Error()}
			}
			off += n
			if rep.Type == resp.TypePush {
				if isFlushPush(rep) && r.flushed != nil {
					r.flushed(i)
				}
				continue
			}
			if s := steps[step]; s.soft {
				// the watch needs RESP3: a RESP2 server takes CLIENT
				// TRACKING ON, then drops what it would tell
				resp2 = resp2 || !s.watch && rep.IsError()
				inc.WatchesFlushes = s.watch && !rep.IsError() && !resp2
				step++
				continue
			}
			if steps[step].info != 0 {
				learnInfo(&inc, steps[step].info, rep, secrets...)
				step++
				continue
			}
			if err := checkStep(steps[step], rep, password, secrets); err != nil {
				return nil, err
			}
			step++
		}
		if step == len(steps) {
			break
		}
		if len(buf) == cap(buf) {
			// Keep only what is not parsed yet, and no more of it than
			// one reply may take: a node cannot make the set-up buffer
			// without bound (a huge bulk, or push frames without end).
			if len(buf)-off >= max {
				return nil, &setupError{step: steps[step].name, text: fmt.Sprintf("reply larger than MaxReplyBytes (%d)", max)}
			}
			nb := buf[:0]
			if off == 0 {
				nb = make([]byte, 0, min(2*cap(buf), max))
			}
			buf = append(nb, buf[off:]...)
			off = 0
		}
		n, err := rw.read(buf[len(buf):cap(buf)], deadline)
		if err != nil {
			return nil, &setupError{step: steps[step].name, text: "reading reply: " + err.Error(), io: err}
		}
		buf = buf[:len(buf)+n]
	}
	seen := time.Now()
	//mutant:replica-setup-accepted
	if inc.Err == "" && inc.Role == "slave" {
		// a replica's data came by replication, and a promotion (REPLICAOF
		// NO ONE, a virtual IP moved before it) keeps this connection with
		// no new set-up: what it said now would stand for the primary it
		// becomes. Refused: the node is set up again until it is one
		// (Sentinel and cluster nodes ask ROLE for the same reason).
		return nil, &setupError{step: "INFO replication", text: errReplicaSetup.Error()}
	}
	rest, err := setupRest(r, i, buf[off:])
	if err == nil && r.Incarnations && r.learn != nil {
		inc.finish(seen)
		r.learn(i, shard, &inc)
	}
	return rest, err
}

// setupRest checks what was read past node i's last set-up reply: push
// frames only (an incomplete last one is returned for the connection's
// reader); a flush among them is noted.
func setupRest(r *resolved, i int, rest []byte) ([]byte, error) {
	for p := 0; p < len(rest); {
		rep, n, err := r.Parser.Parse(rest[p:])
		switch {
		case err == nil && rep.Type == resp.TypePush:
			if isFlushPush(rep) && r.flushed != nil {
				r.flushed(i)
			}
			p += n
		case err == resp.ErrIncomplete && rest[p] == resp.TypePush:
			return rest, nil // the reader completes and skips it
		default:
			return nil, &setupError{step: "end", text: errStraySetup.Error()}
		}
	}
	if len(rest) == 0 {
		return nil, nil
	}
	return rest, nil
}

func checkStep(s setupStep, rep resp.Reply, password string, secrets []string) error {
	if rep.IsError() {
		text := cleanText(string(rep.Data), maxQuoted, secrets)
		var kind error
		if s.auth || rep.HasErrorPrefix("NOAUTH") || rep.HasErrorPrefix("WRONGPASS") {
			kind = ErrAuth
		}
		noPassword := password == "" && rep.HasErrorPrefix("NOAUTH")
		return &setupError{step: s.name, text: text, kind: kind, noPassword: noPassword}
	}
	if s.role {
		return checkRole(rep, secrets)
	}
	if s.sha != "" && !bytes.EqualFold(rep.Data, []byte(s.sha)) {
		return &setupError{step: s.name, text: "reply " + cleanText(rep.String(), maxQuoted, secrets) + " is not the script's SHA " + s.sha}
	}
	return nil
}

// setupConn runs a node's connection set-up on nc exactly as New's
// connections run it (nodeaddr.Setup, which it is, says what for): AUTH
// (na's user and password), HELLO 3 (na.RESP3), SELECT (na.DB), CLIENT
// SETNAME (name, or DefaultClientName when empty) and SCRIPT LOAD of every
// script, written in one go; every reply is checked (a script's SHA too)
// and a byte past the last reply is an error. A refused authentication
// wraps ErrAuth; no error contains the password. nc's deadlines are left
// set to deadline.
func setupConn(nc net.Conn, na nodeaddr.Node, name string, scripts []nodeaddr.Script, deadline time.Time) error {
	if name == "" {
		name = DefaultClientName
	}
	r := &resolved{
		nodes: []nodeSpec{{username: na.Username, password: na.Password, db: na.DB, resp3: na.RESP3, clientName: name}},
	}
	for _, s := range scripts {
		r.Scripts = append(r.Scripts, Script{Text: s.Text, SHA: s.SHA})
	}
	rest, err := runSetup(netRW{nc}, r, 0, 0, deadline)
	// Complete push frames after the set-up were read and dropped here; an
	// incomplete one would leave its tail to nc's next reader.
	for p := 0; err == nil && p < len(rest); {
		n, perr := r.Parser.Skip(rest[p:])
		if perr != nil {
			return &setupError{step: "end", text: "incomplete push frame after the set-up replies"}
		}
		p += n
	}
	return err
}

// The set-up reaches redmux-bench through internal/nodeaddr, which mux
// imports: one implementation, not in mux's exported API.
func init() { nodeaddr.Setup = setupConn }
