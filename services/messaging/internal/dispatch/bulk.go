package dispatch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/chorus-sms/chorus/services/messaging/internal/store"
)

// Bulk batches (SendMessages with bulk) become messages and dispatch jobs (groups.go) here,
// one batch per transaction, while fewer than expandBelow messages of the batch's sending
// number wait in those jobs: two batches, about a second of dispatch at its best rate, so the queue never runs
// dry between two looks, and a campaign's audience waits as a thousand rows rather than a
// million messages and jobs. Counting per number keeps a slow number's backlog from holding
// up the batches of every other number. A batch waits until one of its messages may go (quiet
// hours), and while its source is paused.
const (
	expandBelow = 2000
	// expandEvery is how often the expander looks; a bulk batch due at once, and a resume,
	// wake it sooner (WakeExpander).
	expandEvery = 250 * time.Millisecond
	// expandRetry is how long a batch that failed to expand is set aside.
	expandRetry = time.Minute
	// expandTogether bounds the batches (of as many numbers) one round expands in one
	// transaction.
	expandTogether = 16
)

// expandLoop expands due batches until ctx ends.
func (d *Dispatcher) expandLoop(ctx context.Context) {
	t := time.NewTicker(expandEvery)
	defer t.Stop()
	for {
		if err := d.expandDue(ctx); err != nil && ctx.Err() == nil {
			d.log.ErrorContext(ctx, "expand bulk batches", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-d.expandWake:
		}
	}
}

// waitingMessages is how many messages a waiting job of expandDue's count dispatches: a
// group's size (a group queued before its list was packed: the list's length), or one.
const waitingMessages = `CASE WHEN jsonb_typeof(args->'message_ids') = 'array' THEN jsonb_array_length(args->'message_ids')
	ELSE coalesce((args->>'size')::int, 1) END`

// expandDue expands due batches until none is due from a number with fewer than expandBelow
// messages waiting in dispatch jobs. Each round takes one batch of each such number (up to
// expandTogether) in one transaction and queues their jobs interleaved, a job of each number
// in turn: River
// hands out jobs oldest first, so campaigns on several numbers are dispatched side by side
// rather than one batch's run after another.
func (d *Dispatcher) expandDue(ctx context.Context) error {
	for {
		// A group job waits for its messages; a send job for one. The jobs are found by
		// River's index of state and queue: the jobs waiting, not every job ever queued.
		rows, err := d.pool.Query(ctx, `SELECT args->>'number' FROM river_job
			WHERE state IN ('available', 'scheduled') AND queue = ANY($1)
				AND (state = 'available' OR metadata ? 'output') AND kind = ANY($2) AND args->>'number' IS NOT NULL
			GROUP BY 1 HAVING sum(`+waitingMessages+`) >= $3`,
			[]string{river.QueueDefault, queueGroups}, []string{sendArgs{}.Kind(), sendGroupArgs{}.Kind()}, expandBelow)
		if err != nil {
			return fmt.Errorf("numbers with a full queue: %w", err)
		}
		skip, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return fmt.Errorf("numbers with a full queue: %w", err)
		}
		var round []*store.TakenBulk
		var failed []int64
		var errs []error
		err = d.store.InTx(ctx, func(tx pgx.Tx) error {
			for len(round)+len(failed) < expandTogether {
				var taken *store.TakenBulk
				// Each batch under a savepoint: one that fails is set aside alone.
				err := pgx.BeginFunc(ctx, tx, func(sp pgx.Tx) (err error) {
					taken, err = d.store.ExpandBulk(ctx, sp, skip)
					return err
				})
				if err != nil && taken == nil {
					return err
				}
				if taken == nil {
					break // none due
				}
				skip = append(skip, taken.Number)
				if err != nil {
					failed, errs = append(failed, taken.ID), append(errs, err)
					continue
				}
				round = append(round, taken)
			}
			return d.queueInterleaved(ctx, tx, round)
		})
		if err != nil {
			return err
		}
		for _, id := range failed {
			// A batch that cannot be expanded must not hold up every batch behind it.
			errs = append(errs, d.store.DeferBulk(ctx, id, expandRetry))
		}
		if err := errors.Join(errs...); err != nil || len(round)+len(failed) == 0 {
			return err
		}
	}
}

// queueInterleaved queues the dispatch of the messages the batches of round created, inside
// tx, in group jobs (groups.go), a group of each batch in turn, in one COPY.
func (d *Dispatcher) queueInterleaved(ctx context.Context, tx pgx.Tx, round []*store.TakenBulk) error {
	each := make([][]sendGroupArgs, len(round))
	for i, b := range round {
		each[i] = groups(b.OrgID, b.Number, b.Created)
	}
	var params []river.InsertManyParams
	for i := 0; ; i++ {
		more := false
		for _, gs := range each {
			if i < len(gs) {
				params = append(params, river.InsertManyParams{Args: gs[i]})
				more = true
			}
		}
		if !more {
			break
		}
	}
	return d.insertSends(ctx, tx, params)
}

// WakeExpander has the expander look for due batches now.
func (d *Dispatcher) WakeExpander() {
	select {
	case d.expandWake <- struct{}{}:
	default: // a look is already coming
	}
}
