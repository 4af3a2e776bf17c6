package hook

import (
	"context"
	"testing"
)

// ctxKey marks the test's context, so the hook is seen to pass it on.
type ctxKey struct{}

func TestSetAndAt(t *testing.T) {
	ctx := context.WithValue(context.Background(), ctxKey{}, 1)
	At(ctx, AcquireReplied) // unset: nothing happens
	var got []Point
	var gotCtx context.Context
	if old := Set(func(c context.Context, p Point) { got = append(got, p); gotCtx = c }); old != nil {
		t.Fatal("a hook was installed before the test")
	}
	At(ctx, AcquireReplied)
	At(ctx, ExtendReplied)
	if len(got) != 2 || got[0] != AcquireReplied || got[1] != ExtendReplied || gotCtx != ctx {
		t.Fatalf("calls = %v (ctx passed: %v)", got, gotCtx == ctx)
	}
	if old := Set(nil); old == nil {
		t.Fatal("Set(nil) did not return the installed hook")
	}
	At(ctx, AcquireReplied)
	if len(got) != 2 {
		t.Fatal("the hook ran after it was removed")
	}
}

// BenchmarkAtUnset is the cost the hook adds to Acquire and Extend in
// production: an atomic load and a branch, no allocation.
func BenchmarkAtUnset(b *testing.B) {
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		At(ctx, AcquireReplied)
	}
}
