package mux

import (
	"strconv"
)

// Error returns "mux: node N: <server text>".
func (e *ServerError) Error() string {
	return "mux: node " + strconv.Itoa(e.Node) + ": " + e.Text
}

// Is makes errors.Is(err, ErrServer) true for every *ServerError.
func (e *ServerError) Is(target error) bool { return target == ErrServer }

// NodeError is a node-level failure with its cause: errors.Is matches Kind
// (ErrNodeDown, ErrConnBroken, ErrProtocol, ErrTimeout) and, through Unwrap,
// the cause (for example ErrAuth, a *resp.ProtocolError or a syscall error).
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
}

func (e *setupError) Error() string {
	s := "set-up " + e.step + " failed"
	if e.kind == ErrAuth {
		s = "AUTH failed (set-up " + e.step + ")"
	}
	if e.text != "" {
		s += ": " + e.text
	}
	return s
}

func (e *setupError) Unwrap() error { return e.kind }
