package engine

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/chorus-sms/chorus/pkg/outbox"
	"github.com/chorus-sms/chorus/pkg/pgtest"
	eventsv1 "github.com/chorus-sms/chorus/proto/gen/go/events/v1"
	"github.com/chorus-sms/chorus/services/polls/internal/questions"
	"github.com/chorus-sms/chorus/services/polls/internal/store"
	"github.com/chorus-sms/chorus/services/polls/migrations"
)

// A reply is handled on the consumer's own connection, the whole way: the answer stored, the
// participant completed, its outro queued and its poll finished. With every connection of the
// pool held by transactions (the reply consumer and a round of step jobs), the reply still
// counts instead of waiting for a connection none of them will give back.
func TestReplyNeedsNoSecondConnection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := handedQuestion(t)
	pool, st, org, contact, p := f.pool, f.st, f.p.OrgID, f.contact, f.p
	require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error {
		_, err := st.MarkAsked(ctx, tx, org, p.ID, contact, 1, time.Now().UTC()) // its "sent" status event
		return err
	}))

	one := pgtest.OneConnection(t, pool)
	r, err := New(Config{Pool: one, Schema: migrations.Schema, Store: store.New(one), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	payload, err := proto.Marshal(&eventsv1.MessageReceived{OrganizationId: org.String(), MessageId: uuid.NewString(),
		From: "+12025550100", ContactId: contact.String(), Body: "fine", ReceivedAt: timestamppb.Now()})
	require.NoError(t, err)
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	require.NoError(t, r.store.InTx(short, func(tx pgx.Tx) error {
		return r.MessagingHandler()(short, tx, outbox.Message{EventID: uuid.New(), Type: eventReceived, OrgID: org, Payload: payload})
	}))

	ps, responses, err := st.Participants(ctx, org, p.ID, store.ParticipantFilter{Limit: 10})
	require.NoError(t, err)
	require.Len(t, ps, 1)
	assert.Equal(t, store.Completed, ps[0].Status)
	require.Len(t, responses[ps[0].ID], 1)
	assert.Equal(t, "fine", responses[ps[0].ID][0].Answer)
	done, err := st.Get(ctx, org, p.ID)
	require.NoError(t, err)
	assert.Equal(t, store.StatusCompleted, done.Status, "its last participant completed the poll")
}

// A reply handled before its question's status event (a reply racing the "sent" event, or a
// question held for quiet hours) answers nothing and moves nobody; the status event of
// another message (a queued status, a campaign's) asks nothing; once the question's "sent"
// event is handled, the next reply answers it.
func TestReplyAnswersOnlyTheQuestionThatReachedTheCarrier(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := handedQuestion(t)
	pool, st, org, contact, p := f.pool, f.st, f.p.OrgID, f.contact, f.p
	r, err := New(Config{Pool: pool, Schema: migrations.Schema, Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	handle := func(typ string, ev proto.Message) {
		t.Helper()
		payload, err := proto.Marshal(ev)
		require.NoError(t, err)
		m := outbox.Message{EventID: uuid.New(), Type: typ, OrgID: org, Payload: payload}
		require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error { return r.MessagingHandler()(ctx, tx, m) }))
	}
	reply := func(body string) {
		handle(eventReceived, &eventsv1.MessageReceived{OrganizationId: org.String(), MessageId: uuid.NewString(),
			From: "+12025550100", ContactId: contact.String(), Body: body, ReceivedAt: timestamppb.Now()})
	}
	status := func(kind, key, s string) {
		handle(eventStatusChanged, &eventsv1.MessageStatusChanged{OrganizationId: org.String(), MessageId: uuid.NewString(),
			To: "+12025550100", Status: s, SourceKind: kind, SourceId: p.ID.String(), DedupeKey: key, OccurredAt: timestamppb.Now()})
	}
	participant := func() store.Participant {
		t.Helper()
		ps, _, err := st.Participants(ctx, org, p.ID, store.ParticipantFilter{Limit: 10})
		require.NoError(t, err)
		require.Len(t, ps, 1)
		return ps[0]
	}
	key := "poll:" + p.ID.String() + ":" + contact.String() + ":1:intro"

	reply("too early")
	status("poll", key, "failed")
	status("campaign", "campaign:"+p.ID.String()+":"+contact.String(), "sent")
	status("poll", "poll:"+p.ID.String()+":"+contact.String()+":2:q2", "sent") // not its step
	reply("still early")
	got := participant()
	assert.Equal(t, store.InProgress, got.Status)
	assert.EqualValues(t, 0, got.ResponseCount, "no answer before the question reached the carrier")
	assert.EqualValues(t, 0, got.AskedStep)
	assert.True(t, wanted(outbox.Message{Type: eventReceived}))

	status("poll", key, "sent")
	status("poll", key, "delivered") // a second status changes nothing
	assert.EqualValues(t, 1, participant().AskedStep)
	reply("now")
	got = participant()
	assert.Equal(t, store.Completed, got.Status)
	assert.EqualValues(t, 1, got.ResponseCount)
}

// questionFixture is an active poll of one open-ended question whose one participant's
// question 1 was handed to messaging, its "sent" status event not yet handled.
type questionFixture struct {
	pool    *pgxpool.Pool
	st      *store.Store
	p       store.Poll
	contact uuid.UUID
}

func handedQuestion(t *testing.T) questionFixture {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.SchemaPool(t, migrations.Schema, migrations.FS, migrations.With...)
	st := store.New(pool)
	org, contact, now := uuid.New(), uuid.New(), time.Now().UTC()
	p := store.Poll{ID: uuid.New(), OrgID: org, Name: "p", Status: store.StatusActive, MaxReasks: 1, TimeoutHours: 1,
		Questions: []questions.Question{{Number: 1, Text: "q", Type: questions.OpenEnded, ResponseCode: "r"}}, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error { return st.Insert(ctx, tx, &p) }))
	require.NoError(t, st.AddParticipants(ctx, org, p.ID, []store.NewParticipant{{ContactID: contact, Phone: "+12025550100", Member: []byte(`{}`)}}))
	require.NoError(t, st.StartSending(ctx, org, p.ID, "UTC"))
	require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error {
		b, err := st.BeginBatch(ctx, tx, org, p.ID, 1, now)
		if err != nil {
			return err
		}
		require.Len(t, b, 1)
		handed, err := st.LockParticipant(ctx, tx, org, b[0].Participant)
		if err != nil {
			return err
		}
		return st.MarkSent(ctx, tx, &handed, false, now)
	}))
	return questionFixture{pool: pool, st: st, p: p, contact: contact}
}
