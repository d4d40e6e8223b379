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

// Bulk batches (SendMessages with bulk) become messages and dispatch jobs here, one batch per
// transaction, while fewer than expandBelow send jobs of the batch's sending number are
// available: two batches, about a second of dispatch at its best rate, so the queue never runs
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

// expandDue expands due batches until none is due from a number with fewer than expandBelow
// available send jobs.
func (d *Dispatcher) expandDue(ctx context.Context) error {
	for {
		rows, err := d.pool.Query(ctx, `SELECT args->>'number' FROM river_job
			WHERE state = 'available' AND queue = $1 AND kind = $2 AND args ? 'number'
			GROUP BY 1 HAVING count(*) >= $3`, river.QueueDefault, sendArgs{}.Kind(), expandBelow)
		if err != nil {
			return fmt.Errorf("numbers with a full queue: %w", err)
		}
		full, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return fmt.Errorf("numbers with a full queue: %w", err)
		}
		var taken *store.TakenBulk
		err = d.store.InTx(ctx, func(tx pgx.Tx) error {
			if taken, err = d.store.ExpandBulk(ctx, tx, full); err != nil || taken == nil {
				return err
			}
			return d.queueFromTx(ctx, tx, taken.OrgID, taken.Number, taken.Created)
		})
		if err != nil && taken != nil && ctx.Err() == nil {
			// A batch that cannot be expanded must not hold up every batch behind it.
			return errors.Join(err, d.store.DeferBulk(ctx, taken.ID, expandRetry))
		}
		if err != nil || taken == nil {
			return err
		}
	}
}

// WakeExpander has the expander look for due batches now.
func (d *Dispatcher) WakeExpander() {
	select {
	case d.expandWake <- struct{}{}:
	default: // a look is already coming
	}
}
