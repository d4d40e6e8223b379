package resource

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/tenant"
)

// record is a stored record of a fake store whose transactions commit only when they succeed.
type record struct{ status string }

func fakeMoves(stored *record, told *[]string, tellErr error) *Moves[record] {
	return &Moves[record]{
		Kind: widget,
		InTx: func(_ context.Context, fn func(pgx.Tx) error) error {
			before := *stored
			if err := fn(nil); err != nil {
				*stored = before // rolled back
				return err
			}
			return nil
		},
		Lock:  func(context.Context, pgx.Tx, uuid.UUID, uuid.UUID) (record, error) { return *stored, nil },
		State: func(r *record) string { return r.status + " state" },
		Tell: func(_ context.Context, _, _ uuid.UUID, state string) error {
			*told = append(*told, state)
			return tellErr
		},
	}
}

// A move that changes the state tells messaging once; one that does not tells nothing.
func TestMoveTellsMessagingTheNewState(t *testing.T) {
	ctx, _ := as(tenant.AccessWrite)
	stored, told := &record{status: "active"}, []string{}
	m := fakeMoves(stored, &told, nil)
	save := func(status string) func(pgx.Tx, *record) error {
		return func(_ pgx.Tx, r *record) error { r.status = status; *stored = *r; return nil }
	}
	got, err := m.Move(ctx, uuid.NewString(), save("paused"))
	require.NoError(t, err)
	assert.Equal(t, "paused", got.status)
	_, err = m.Move(ctx, uuid.NewString(), save("paused"))
	require.NoError(t, err)
	assert.Equal(t, []string{"paused state"}, told)
}

// A move messaging refused is rolled back and messaging told the committed state again; a
// move its own check refuses tells nothing.
func TestFailedMoveResyncsMessaging(t *testing.T) {
	ctx, _ := as(tenant.AccessWrite)
	refused := errors.New("messaging unavailable")
	stored, told := &record{status: "active"}, []string{}
	m := fakeMoves(stored, &told, refused)
	_, err := m.Move(ctx, uuid.NewString(), func(_ pgx.Tx, r *record) error { r.status = "paused"; *stored = *r; return nil })
	assert.ErrorIs(t, err, refused)
	assert.Equal(t, "active", stored.status)
	assert.Equal(t, []string{"paused state", "active state"}, told, "told the move, then the committed state")

	told = told[:0]
	invalid := widget.InvalidMove("pause", "completed")
	_, err = m.Move(ctx, uuid.NewString(), func(pgx.Tx, *record) error { return invalid })
	assert.Same(t, invalid, err)
	assert.Empty(t, told)
}
