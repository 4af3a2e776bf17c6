package mux

import "testing"

// The step a set-up failed at is named once: net's "connect: ..." cause
// under "set-up connect failed" read "connect failed: connect: ...".
func TestSetupErrorNamesStepOnce(t *testing.T) {
	e := &setupError{step: "connect", text: "connect: connection refused"}
	if got := e.Error(); got != "set-up connect failed: connection refused" {
		t.Errorf("Error() = %q", got)
	}
}
