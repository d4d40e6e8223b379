package dispatch

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/chorus-sms/chorus/pkg/outbox"
	"github.com/chorus-sms/chorus/services/messaging/internal/carrier"
	"github.com/chorus-sms/chorus/services/messaging/internal/store"
)

// SetSourceState pauses, resumes or cancels a source's queued messages. A cancel withdraws
// every message of the source still queued in the same transaction (failed SOURCE_CANCELED,
// their status events published with it) and returns what they hold before it answers: a
// message held for quiet hours would otherwise stay queued, counted by analytics and holding
// credits, until its send job ran in the morning.
func (d *Dispatcher) SetSourceState(ctx context.Context, org uuid.UUID, kind, id, state string) error {
	s := carrier.Status{Status: carrier.StatusFailed, ErrorCode: CodeSourceCanceled}
	var withdrawn []store.Message
	err := d.store.InTx(ctx, func(tx pgx.Tx) error {
		if err := d.store.SetSourceState(ctx, tx, org, kind, id, state); err != nil || state != store.SourceCanceled {
			return err
		}
		var err error
		if withdrawn, err = d.store.WithdrawQueued(ctx, tx, org, kind, id, s.ErrorCode, time.Now()); err != nil {
			return err
		}
		changes := make([]statusChange, len(withdrawn))
		for i, m := range withdrawn {
			changes[i] = statusChange{m, s}
		}
		return outbox.EnqueueMany(ctx, tx, statusEvents(changes))
	})
	if err != nil {
		return fmt.Errorf("set state %s of %s %s: %w", state, kind, id, err)
	}
	ctx = context.WithoutCancel(ctx) // a withdrawn message must get its credits returned
	for _, m := range withdrawn {
		d.settleMoved(ctx, m, s.Status)
	}
	return nil
}
