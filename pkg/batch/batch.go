// Package batch gathers calls made at the same time into one run of a batch function, as a
// database's group commit does: while runs are under way calls queue up, and the next run takes
// every queued call (up to a maximum) at once. There is no timer, so a lone call is not delayed;
// under load each round trip serves many callers instead of one.
package batch

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Func runs a batch and answers each input, in order (len(out) == len(in)). An error fails
// every call of the batch; a failure of one input belongs in its own output.
type Func[In, Out any] func(ctx context.Context, in []In) ([]Out, error)

// Batcher runs Func over the calls of Do gathered into batches.
type Batcher[In, Out any] struct {
	fn      Func[In, Out]
	max     int
	runs    int
	timeout time.Duration

	mu      sync.Mutex
	queue   []call[In, Out]
	running int
}

type call[In, Out any] struct {
	in   In
	done chan result[Out]
}

type result[Out any] struct {
	out Out
	err error
}

// New returns a Batcher that runs fn over at most max inputs at a time, with up to runs batches
// under way at once, each under a context of its own that ends after timeout.
func New[In, Out any](fn Func[In, Out], max, runs int, timeout time.Duration) *Batcher[In, Out] {
	return &Batcher[In, Out]{fn: fn, max: max, runs: runs, timeout: timeout}
}

// Do runs in within a batch and returns its output. It waits for the batch to finish even if
// ctx ends first: the batch may already have acted on in, and its caller must know how.
func (b *Batcher[In, Out]) Do(ctx context.Context, in In) (Out, error) {
	c := call[In, Out]{in: in, done: make(chan result[Out], 1)}
	b.mu.Lock()
	b.queue = append(b.queue, c)
	if b.running < b.runs {
		b.running++
		go b.run()
	}
	b.mu.Unlock()
	r := <-c.done
	return r.out, r.err
}

// run takes batches off the queue until it is empty.
func (b *Batcher[In, Out]) run() {
	for {
		b.mu.Lock()
		n := min(len(b.queue), b.max)
		if n == 0 {
			b.running--
			b.mu.Unlock()
			return
		}
		calls := make([]call[In, Out], n)
		copy(calls, b.queue)
		b.queue = append(b.queue[:0], b.queue[n:]...)
		b.mu.Unlock()
		b.runBatch(calls)
	}
}

func (b *Batcher[In, Out]) runBatch(calls []call[In, Out]) {
	ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
	defer cancel()
	in := make([]In, len(calls))
	for i, c := range calls {
		in[i] = c.in
	}
	out, err := b.fn(ctx, in)
	if err == nil && len(out) != len(in) {
		err = fmt.Errorf("batch: %d outputs for %d inputs", len(out), len(in))
	}
	for i, c := range calls {
		if err != nil {
			c.done <- result[Out]{err: err}
			continue
		}
		c.done <- result[Out]{out: out[i]}
	}
}
