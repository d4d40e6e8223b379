package outbox_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/chorus-sms/chorus/pkg/outbox"
)

func TestEnqueueStoresEventInTransaction(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := uuid.New()
	id := e.enqueue("contact.deleted", org, "hello")

	require.Equal(t, uuid.Version(7), id.Version())
	var (
		typ     string
		gotOrg  uuid.UUID
		payload []byte
		waiting bool
	)
	require.NoError(t, e.db.QueryRow(e.ctx,
		`SELECT event_type, organization_id, payload, EXISTS (SELECT FROM outbox_pending p WHERE p.id = o.id)
		FROM outbox o WHERE event_id = $1`, id).
		Scan(&typ, &gotOrg, &payload, &waiting))
	require.Equal(t, "contact.deleted", typ)
	require.Equal(t, org, gotOrg)
	require.True(t, waiting, "a new event waits to be published")
	var got wrapperspb.StringValue
	require.NoError(t, proto.Unmarshal(payload, &got))
	require.Equal(t, "hello", got.GetValue())
}

func TestEnqueueRejectsIncompleteEvent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := uuid.New()
	for name, ev := range map[string]outbox.Event{
		"no type":         {OrgID: org, Payload: wrapperspb.String("x")},
		"no organization": {Type: "contact.deleted", Payload: wrapperspb.String("x")},
		"no payload":      {Type: "contact.deleted", OrgID: org},
	} {
		t.Run(name, func(t *testing.T) {
			err := pgx.BeginFunc(e.ctx, e.db, func(tx pgx.Tx) error { return outbox.Enqueue(e.ctx, tx, ev) })
			require.Error(t, err)
		})
	}
	require.Zero(t, e.count(`SELECT count(*) FROM outbox`))
}
