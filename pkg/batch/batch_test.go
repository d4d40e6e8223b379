package batch

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// TestConcurrentCallsShareRuns: calls made while a run is under way go in one later run, and
// each gets its own answer.
func TestConcurrentCallsShareRuns(t *testing.T) {
	var mu sync.Mutex
	var sizes []int
	started, release := make(chan struct{}), make(chan struct{})
	b := New(func(_ context.Context, in []int) ([]int, error) {
		if in[0] == 0 {
			close(started)
			<-release // hold the first run so the others queue behind it
		}
		mu.Lock()
		sizes = append(sizes, len(in))
		mu.Unlock()
		out := make([]int, len(in))
		for i, v := range in {
			out[i] = v * 10
		}
		return out, nil
	}, 100, 1, time.Second)
	var wg sync.WaitGroup
	got := make([]int, 51)
	call := func(i int) {
		defer wg.Done()
		v, err := b.Do(context.Background(), i)
		if err != nil {
			t.Error(err)
		}
		got[i] = v
	}
	wg.Add(1)
	go call(0)
	<-started // the first run has taken call 0 alone (queued() is 0 before call 0 is made, too)
	for i := 1; i <= 50; i++ {
		wg.Add(1)
		go call(i)
	}
	for b.queued() != 50 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	for i, v := range got {
		if v != i*10 {
			t.Fatalf("call %d answered %d", i, v)
		}
	}
	if len(sizes) != 2 || sizes[0] != 1 || sizes[1] != 50 {
		t.Fatalf("runs of %v, want [1 50]", sizes)
	}
}

// TestErrorFailsEveryCallOfItsBatch, and a short answer is an error, not a zero value.
func TestErrorFailsEveryCallOfItsBatch(t *testing.T) {
	boom := errors.New("boom")
	b := New(func(context.Context, []int) ([]int, error) { return nil, boom }, 10, 1, time.Second)
	if _, err := b.Do(context.Background(), 1); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	short := New(func(context.Context, []int) ([]int, error) { return nil, nil }, 10, 1, time.Second)
	if _, err := short.Do(context.Background(), 1); err == nil {
		t.Fatal("a batch that answered nothing succeeded")
	}
}

// queued is how many calls wait for a run.
func (b *Batcher[In, Out]) queued() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue)
}
