package resource

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Moves makes the state moves of one kind of record whose queued messages messaging keeps in
// a source state (held, sent or withdrawn) that follows the record's status.
type Moves[R any] struct {
	Kind Kind
	// InTx runs a transaction; Lock reads the organization's record under its row lock in it.
	InTx func(ctx context.Context, fn func(pgx.Tx) error) error
	Lock func(ctx context.Context, tx pgx.Tx, org, id uuid.UUID) (R, error)
	// State is the source state of the record's status.
	State func(*R) string
	// Tell sets the record's source state in messaging.
	Tell func(ctx context.Context, org, id uuid.UUID, state string) error
}

// Move applies move (which checks the status allows it and saves the record) to the caller's
// record rawID under its row lock (write access required), then tells messaging the record's
// new source state, when it changed, while it still holds the lock, before the commit: so
// messaging hears the moves in the order they commit, its last word is the committed status's,
// and nothing more is sent once a pause or cancel answers. A move that fails after messaging
// was told tells it the committed status's state again.
func (m *Moves[R]) Move(ctx context.Context, rawID string, move func(tx pgx.Tx, r *R) error) (R, error) {
	var r R
	org, id, err := m.Kind.Target(ctx, rawID)
	if err != nil {
		return r, err
	}
	told := false
	err = m.InTx(ctx, func(tx pgx.Tx) error {
		if r, err = m.Lock(ctx, tx, org, id); err != nil {
			return err
		}
		before := m.State(&r)
		if err := move(tx, &r); err != nil {
			return err
		}
		if after := m.State(&r); after != before {
			told = true
			return m.Tell(ctx, org, id, after)
		}
		return nil
	})
	if err != nil && told {
		if serr := m.resync(context.WithoutCancel(ctx), org, id); serr != nil {
			err = errors.Join(err, serr)
		}
	}
	return r, m.Kind.StoreError(err)
}

// resync tells messaging the source state of the record's committed status, under its row
// lock so that no move commits in between.
func (m *Moves[R]) resync(ctx context.Context, org, id uuid.UUID) error {
	return m.InTx(ctx, func(tx pgx.Tx) error {
		r, err := m.Lock(ctx, tx, org, id)
		if err != nil {
			return err
		}
		if err := m.Tell(ctx, org, id, m.State(&r)); err != nil {
			return fmt.Errorf("resync messaging source state: %w", err)
		}
		return nil
	})
}
