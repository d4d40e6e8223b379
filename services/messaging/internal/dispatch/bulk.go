package dispatch

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/chorus-sms/chorus/services/messaging/internal/store"
)

// Bulk batches (SendMessages with bulk) become messages and dispatch jobs here, one batch per
// transaction, while fewer than expandBelow send jobs are available: two batches, about a
// second of dispatch at its best rate, so the queue never runs dry between two looks, and a
// campaign's audience waits as a thousand rows rather than a million messages and jobs. A
// batch waits until one of its messages may go (quiet hours), and while its source is paused.
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

// expandDue expands due batches until the queue holds expandBelow available send jobs or no
// batch is due.
func (d *Dispatcher) expandDue(ctx context.Context) error {
	for {
		var available int
		err := d.pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM river_job WHERE state = 'available' AND queue = $1 LIMIT $2) a`,
			river.QueueDefault, expandBelow).Scan(&available)
		if err != nil || available >= expandBelow {
			return err
		}
		var taken *store.TakenBulk
		err = d.store.InTx(ctx, func(tx pgx.Tx) error {
			if taken, err = d.store.ExpandBulk(ctx, tx); err != nil || taken == nil {
				return err
			}
			return d.QueueTx(ctx, tx, taken.OrgID, taken.Created...)
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
