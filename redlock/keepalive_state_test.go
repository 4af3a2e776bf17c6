package redlock

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// A keep-alive's phases: the next event is the due extension only while
// one is scheduled, else the end of validity; draining keeps its cause;
// idle cancels the context with the cause and clears the record.
func TestKeepAlivePhases(t *testing.T) {
	var k kaState
	require.False(t, k.kept(), "the zero record is idle")
	ctx, cancel := context.WithCancelCause(context.Background())
	k.ctx, k.cancel, k.end = ctx, cancel, 100
	k.becomeScheduled(40)
	require.True(t, k.kept())
	require.EqualValues(t, 40, k.next())
	k.becomeScheduled(140)
	require.EqualValues(t, 100, k.next(), "the end comes first")
	k.becomeExtending()
	require.EqualValues(t, 100, k.next(), "extending: only the end is watched")
	k.becomeDraining(ErrHoldLimit)
	require.EqualValues(t, 100, k.next(), "draining: only the end is watched")
	require.Equal(t, ErrHoldLimit, k.cause)
	k.becomeIdle(ErrNotHeld)
	require.False(t, k.kept())
	require.Equal(t, kaState{}, k)
	require.ErrorIs(t, context.Cause(ctx), ErrNotHeld)
}
