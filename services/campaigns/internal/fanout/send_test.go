package fanout

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/clients"
	"github.com/chorus-sms/chorus/pkg/pgtest"
	"github.com/chorus-sms/chorus/services/campaigns/internal/store"
	"github.com/chorus-sms/chorus/services/campaigns/migrations"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// newRunner is a Runner over a database of its own, without peers (the tests reach no
// step that calls them).
func newRunner(t *testing.T) (*Runner, *store.Store, *pgxpool.Pool) {
	t.Helper()
	pool := pgtest.SchemaPool(t, migrations.Schema, migrations.FS, migrations.With...)
	st := store.New(pool)
	r, err := New(Config{Pool: pool, Schema: migrations.Schema, Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	return r, st, pool
}

// Messaging refusing a batch for a reason that a retry would meet again fails the campaign
// with that reason; an outage is retried.
func TestRefusalIsFinalOnlyForPermanentErrors(t *testing.T) {
	t.Parallel()
	peer := func(code codes.Code, reason string) error {
		return &clients.Error{Peer: "messaging", Method: "SendMessages", Code: code, Reason: reason}
	}
	for _, c := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{peer(codes.InvalidArgument, apierr.ReasonValidation), apierr.ReasonValidation},
		{peer(codes.NotFound, ""), apierr.ReasonFailedPrecondition},
		{peer(codes.PermissionDenied, apierr.ReasonForbidden), apierr.ReasonForbidden},
		{peer(codes.FailedPrecondition, apierr.ReasonBillingSuspended), apierr.ReasonBillingSuspended},
		{peer(codes.Unavailable, apierr.ReasonUnavailable), ""},
		{peer(codes.DeadlineExceeded, ""), ""},
		{errors.New("connection reset"), ""},
	} {
		assert.Equal(t, c.want, refusal(c.err), "%v", c.err)
	}
}

// A send whose job runs out of attempts fails its campaign (UNAVAILABLE) and queues the
// release of its hold, instead of leaving it queued for ever; an earlier submission's job
// leaves the campaign alone.
func TestGiveUpFailsTheCampaignAndReleasesItsHold(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, st, pool := newRunner(t)

	org, now := uuid.New(), time.Now()
	c := store.Campaign{ID: uuid.New(), OrgID: org, Name: "c", Status: store.StatusQueued, Channel: "text", ForceRoute: "AUTO",
		Submission: 2, HeldCredits: 5, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error { return st.Insert(ctx, tx, &c) }))

	require.NoError(t, r.giveUp(ctx, sendArgs{CampaignID: c.ID, OrgID: org, Submission: 1}, errors.New("boom")))
	got, err := st.Get(ctx, org, c.ID)
	require.NoError(t, err)
	assert.Equal(t, store.StatusQueued, got.Status, "another submission's job")

	require.NoError(t, r.giveUp(ctx, sendArgs{CampaignID: c.ID, OrgID: org, Submission: 2}, errors.New("boom")))
	got, err = st.Get(ctx, org, c.ID)
	require.NoError(t, err)
	assert.Equal(t, store.StatusFailed, got.Status)
	require.NotNil(t, got.FailureReason)
	assert.Equal(t, apierr.ReasonUnavailable, *got.FailureReason)
	var releases int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = $1`, releaseArgs{}.Kind()).Scan(&releases))
	assert.Equal(t, 1, releases, "the hold's release is queued with the failure")
}

// Calls overlap, yet a batch is settled only once it and every batch before it are done; a
// failed batch stops the settling, even of later batches that succeeded, so a resumed queue
// starts again at the failed one.
func TestInOrderSettlesOnlyUnbrokenPrefixes(t *testing.T) {
	t.Parallel()
	keys := []uuid.UUID{uuid.New(), uuid.New(), uuid.New(), uuid.New()}
	run := func(failAt int) ([]uuid.UUID, error, int) {
		var settled []uuid.UUID
		o := &inOrder{limit: 2, settle: func(last uuid.UUID) error { settled = append(settled, last); return nil }}
		firstIn, secondIn := make(chan struct{}), make(chan struct{})
		concurrent, most := 0, 0
		var mu sync.Mutex
		var err error
		for i, k := range keys {
			if err = o.start(k, func() error {
				if i == 1 {
					<-firstIn
				}
				mu.Lock()
				concurrent++
				most = max(most, concurrent)
				mu.Unlock()
				switch i {
				case 0:
					close(firstIn)
					<-secondIn // the first call lasts until the second is going
				case 1:
					close(secondIn)
				}
				mu.Lock()
				concurrent--
				mu.Unlock()
				if i == failAt {
					return errors.New("refused")
				}
				return nil
			}); err != nil {
				break
			}
		}
		return settled, o.finish(err), most
	}

	settled, err, most := run(-1)
	require.NoError(t, err)
	assert.Equal(t, keys, settled, "every batch, in order")
	assert.Equal(t, 2, most, "two calls at once")

	settled, err, _ = run(2)
	assert.EqualError(t, err, "refused")
	assert.Equal(t, keys[:2], settled, "nothing from the failed batch on")

	settled, err, _ = run(0)
	assert.EqualError(t, err, "refused")
	assert.Empty(t, settled, "the second batch succeeded but the first did not")
}

// An immediate submit's send is available to work at once; a scheduled one waits for its
// time. (River inserts any job given a time as scheduled, past or not, and only its next
// scheduler pass, up to 5 s later, would have let an immediate campaign start.)
func TestImmediateSendIsAvailableAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, st, pool := newRunner(t)
	state := func(at time.Time) (s string) {
		c := store.Campaign{ID: uuid.New(), OrgID: uuid.New(), Name: "c", Status: store.StatusPending, Channel: "text", ForceRoute: "AUTO", CreatedAt: at, UpdatedAt: at}
		require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error {
			if err := st.Insert(ctx, tx, &c); err != nil {
				return err
			}
			return r.StartTx(ctx, tx, &c, at)
		}))
		require.NoError(t, pool.QueryRow(ctx, `SELECT state FROM river_job WHERE args->>'campaign_id' = $1`, c.ID.String()).Scan(&s))
		return s
	}
	assert.Equal(t, "available", state(time.Now()))
	assert.Equal(t, "scheduled", state(time.Now().Add(time.Hour)))
}
