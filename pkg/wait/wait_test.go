package wait

import (
	"context"
	"testing"
	"time"
)

func TestForEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if For(ctx, time.Hour) {
		t.Fatal("a canceled wait reported a live context")
	}
	if time.Since(start) > time.Second {
		t.Fatal("a canceled wait did not end at once")
	}
	if !Until(context.Background(), time.Now().Add(10*time.Millisecond)) {
		t.Fatal("a wait that ran its course reported a dead context")
	}
	if Until(ctx, time.Now().Add(-time.Second)) {
		t.Fatal("a moment already past on a canceled context reported it live")
	}
}
