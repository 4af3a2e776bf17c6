package mux

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redmux/redmux/internal/nodeaddr"
)

// Errors a node's result can carry, and the errors Do and New return
// (compare with errors.Is).
var (
	ErrTimeout    = errors.New("mux: node timeout")                // no reply before the batch deadline
	ErrNodeDown   = errors.New("mux: node down")                   // not connected; redial runs in the background
	ErrConnBroken = errors.New("mux: connection broken")           // I/O error or EOF; connection replaced
	ErrProtocol   = errors.New("mux: protocol error")              // malformed, oversized or unsolicited reply; connection replaced
	ErrServer     = errors.New("mux: server error reply")          // matched by every *ServerError
	ErrClosed     = errors.New("mux: client closed")               // Do after or during Close
	ErrNotSent    = errors.New("mux: not sent")                    // the batch ended before this node's commands were queued
	ErrBadBatch   = errors.New("mux: batch does not match client") // node count mismatch, empty batch, malformed command
	// ErrPending is a node's error when Do returned early (the quorum
	// outcome was decided) before the node's replies arrived. The node is
	// neither a success nor a failure in the Outcome; it is counted in
	// Pending, and its replies are read and dropped when they come.
	ErrPending = errors.New("mux: reply not awaited (outcome decided early)")
	// ErrConfig is wrapped by every error New returns for a bad Config
	// (its text is "mux: bad config"; the address parser mux shares
	// with redmux-bench wraps it too).
	ErrConfig = nodeaddr.ErrConfig
	// ErrAuth is wrapped by the node error of a connection whose set-up
	// failed authentication (a wrong password or user, or NOAUTH because no
	// password was configured: the error then says that the node requires a
	// password and how to give one). The password never appears in it.
	ErrAuth = errors.New("mux: AUTH failed")
	// ErrPolicyPanic is wrapped by the *PanicError Do returns when the
	// call's Policy.Success panicked. The panic is recovered where the
	// predicate ran (the reading goroutine, which may be the poller): the
	// client keeps working and only that call fails.
	ErrPolicyPanic = errors.New("mux: Policy.Success panicked")
)

// PanicError is Do's error when the call's Policy.Success panicked:
// errors.Is(err, ErrPolicyPanic). The node whose reply was being judged
// counts as failed, the call ends at once (its other nodes are Pending).
type PanicError struct {
	Node  int
	Value any    // what the predicate panicked with
	Stack []byte // the predicate's goroutine stack at the panic
}

func (e *PanicError) Error() string {
	return "mux: Policy.Success panicked on node " + strconv.Itoa(e.Node) + ": " + fmt.Sprint(e.Value)
}

// Is makes errors.Is(err, ErrPolicyPanic) true.
func (e *PanicError) Is(target error) bool { return target == ErrPolicyPanic }

// Unwrap returns the panic value when it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// resourceErr wraps an error of New's own system resources (the close
// eventfd, the epoll or io_uring instance: too many open files, no
// memory) in ErrConfig, the one kind New returns: the process's limits
// are part of what the client is configured with, and a caller must not
// take it for a node's failure. errors.Is finds the cause too (for
// example syscall.EMFILE).
func resourceErr(err error) error {
	return fmt.Errorf("%w: cannot create the client's descriptors (the process's open-file limit, RLIMIT_NOFILE, or memory): %w", ErrConfig, err)
}

// Causes carried by node errors.
var (
	errNotConnected   = errors.New("not connected (redial in progress)")
	errOverdue        = errors.New("reply not received within HardTimeout; connection replaced")
	errUnsolicited    = errors.New("reply without a pending command")
	errReplyTooBig    = errors.New("reply larger than MaxReplyBytes")
	errQueueFull      = errors.New("write queue full (MaxQueuedBytes) until the batch deadline")
	errMustWait       = errors.New("queue full (internal: retried with waiting)")
	errTooManyPending = errors.New("too many replies outstanding (MaxPending) until the batch deadline")
	errUnexpectedKind = errors.New("reply of a kind its command does not expect (a stray reply?)")
	errStraySetup     = errors.New("unsolicited bytes after the connection set-up replies")
	errReplicaSetup   = errors.New("the node is a replica (INFO replication: role:slave): a lock's node must be a primary; set up again until it is one")
)

// ServerError is a node's error reply (e.g. "WRONGTYPE ...", "NOAUTH ..."),
// its text cleaned of the node's passwords and control characters and cut
// to 4096 bytes (the reply itself is as the node sent it).
// errors.Is(err, ErrServer) is true for it.
type ServerError struct {
	Node int
	Text string
}

// Error returns "mux: node N: <server text>".
func (e *ServerError) Error() string {
	return "mux: node " + strconv.Itoa(e.Node) + ": " + e.Text
}

// Is makes errors.Is(err, ErrServer) true for every *ServerError.
func (e *ServerError) Is(target error) bool { return target == ErrServer }

// NodeError is a node-level failure with its cause: errors.Is matches Kind
// (ErrNodeDown, ErrConnBroken, ErrProtocol, ErrTimeout, ErrPending,
// ErrNotSent, ErrClosed) and, through Unwrap, the cause (for example
// ErrAuth, a *resp.ProtocolError or a syscall error). Every per-node error
// of Batch.Reply, Last and Err that is not a server's error reply is a
// *NodeError (a server's is a *ServerError); those without a cause are
// made once per client and shared, so treat them as read-only.
type NodeError struct {
	Node  int
	Addr  string
	Kind  error // one of the package's sentinels
	Cause error // may be nil
}

func (e *NodeError) Error() string {
	s := e.Kind.Error() + ": node " + strconv.Itoa(e.Node) + " (" + e.Addr + ")"
	if e.Cause != nil {
		s += ": " + e.Cause.Error()
	}
	return s
}

// Is matches the error's Kind.
func (e *NodeError) Is(target error) bool { return target == e.Kind }

// Unwrap returns the cause.
func (e *NodeError) Unwrap() error { return e.Cause }

// setupError is a failed step of the connection set-up pipeline.
type setupError struct {
	step string // AUTH, HELLO, SELECT, CLIENT SETNAME, SCRIPT LOAD, dial, ...
	text string // server text or I/O error text; never the password
	kind error  // ErrAuth or nil
	io   error  // the I/O error of a failed write or read, or nil
	// noPassword: the node answered NOAUTH and no password was given
	noPassword bool
}

func (e *setupError) Error() string {
	if e.noPassword {
		return "the node requires a password and none was given (set-up " + e.step + ": " + e.text +
			"): give it in the node's URL, redis://:PASSWORD@host:port (rediss:// for TLS, USER:PASSWORD@ for an ACL user), or in mux.Config.Password"
	}
	s := "set-up " + e.step + " failed"
	if e.kind == ErrAuth {
		s = "AUTH failed (set-up " + e.step + ")"
	}
	if e.text != "" {
		// "set-up connect failed: connection refused", not "...: connect:
		// connection refused": the step is named once
		s += ": " + strings.TrimPrefix(e.text, e.step+": ")
	}
	return s
}

func (e *setupError) Unwrap() []error {
	var out []error
	for _, err := range []error{e.kind, e.io} {
		if err != nil {
			out = append(out, err)
		}
	}
	return out
}

// ErrTLS is wrapped by the node error of a connection whose TLS handshake
// failed (an untrusted or expired certificate, a name mismatch, a client
// certificate the server requires or refuses, no common version). The
// underlying crypto/tls or crypto/x509 error is wrapped too (errors.As
// finds, for example, a *tls.CertificateVerificationError).
var ErrTLS = errors.New("mux: TLS handshake failed")
