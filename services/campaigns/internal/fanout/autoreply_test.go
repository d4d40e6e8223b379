package fanout

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/chorus-sms/chorus/pkg/outbox"
	"github.com/chorus-sms/chorus/pkg/pgtest"
	eventsv1 "github.com/chorus-sms/chorus/proto/gen/go/events/v1"
	"github.com/chorus-sms/chorus/services/campaigns/internal/store"
	"github.com/chorus-sms/chorus/services/campaigns/migrations"
)

// autoReplyFixture is a migrated campaigns schema with a runner whose peers are absent: these
// tests stop where an answer is recorded and its send queued (the e2e tests send them).
type autoReplyFixture struct {
	t      *testing.T
	pool   *pgxpool.Pool
	st     *store.Store
	handle outbox.Handler
	org    uuid.UUID
}

func newAutoReplyFixture(t *testing.T) *autoReplyFixture {
	t.Helper()
	pool := pgtest.SchemaPool(t, migrations.Schema, migrations.FS, migrations.With...)
	st := store.New(pool)
	r, err := New(Config{Pool: pool, Schema: migrations.Schema, Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	return &autoReplyFixture{t: t, pool: pool, st: st, handle: EventHandler(st, r), org: uuid.New()}
}

// campaign stores a sending campaign, started an hour ago, answering automatically or not.
func (f *autoReplyFixture) campaign(enabled bool) uuid.UUID {
	f.t.Helper()
	yes, no, started := "See you there!", "Maybe next time.", time.Now().Add(-time.Hour)
	c := store.Campaign{ID: uuid.New(), OrgID: f.org, Name: "c", Status: store.StatusSending, Channel: "text", ForceRoute: "AUTO",
		NormalizeText: true, AutoReplyEnabled: enabled, YesResponse: &yes, NoResponse: &no,
		FaqReplies: []store.FaqReply{{Question: "Is there parking?", Answer: "Yes — behind the hall."}},
		StartedAt:  &started, CreatedAt: started, UpdatedAt: started}
	ctx := context.Background()
	require.NoError(f.t, f.st.InTx(ctx, func(tx pgx.Tx) error { return f.st.Insert(ctx, tx, &c) }))
	return c.ID
}

// receive applies a message.received event (a new event id each time) for inbound message id.
func (f *autoReplyFixture) receive(id uuid.UUID, kind string, campaign uuid.UUID, contact, category, body string) {
	f.t.Helper()
	payload, err := proto.Marshal(&eventsv1.MessageReceived{
		OrganizationId: f.org.String(), MessageId: id.String(), From: "+12025550143", To: "+12025550100",
		ContactId: contact, Body: body, Category: category, OptOutDetected: category == categoryOptOut,
		ReceivedAt:  timestamppb.Now(),
		Attribution: &eventsv1.Attribution{MessageId: uuid.NewString(), SourceKind: kind, SourceId: campaign.String()},
	})
	require.NoError(f.t, err)
	// Bounded: a handler waiting for a connection the pool will not give fails, not hangs.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(f.t, f.st.InTx(ctx, func(tx pgx.Tx) error {
		return f.handle(ctx, tx, outbox.Message{EventID: uuid.New(), Type: eventReceived, OrgID: f.org, Payload: payload})
	}))
}

// answers returns the recorded answers, by inbound message, and the auto-reply jobs queued.
func (f *autoReplyFixture) answers() (map[uuid.UUID]string, int) {
	f.t.Helper()
	ctx := context.Background()
	rows, err := f.pool.Query(ctx, `SELECT inbound_message_id, body FROM auto_replies`)
	require.NoError(f.t, err)
	got := map[uuid.UUID]string{}
	for rows.Next() {
		var id uuid.UUID
		var body string
		require.NoError(f.t, rows.Scan(&id, &body))
		got[id] = body
	}
	require.NoError(f.t, rows.Err())
	var jobs int
	require.NoError(f.t, f.pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = $1`, autoReplyArgs{}.Kind()).Scan(&jobs))
	return got, jobs
}

// The same inbound message's event applied twice (a redelivery, an outbox replay) records one
// answer and queues one send.
func TestAutoReplyOncePerInboundMessage(t *testing.T) {
	t.Parallel()
	f := newAutoReplyFixture(t)
	c, contact, yes := f.campaign(true), uuid.NewString(), uuid.New()
	f.receive(yes, SourceKind, c, contact, "affirmative", "Yes!")
	f.receive(yes, SourceKind, c, contact, "affirmative", "Yes!")
	got, jobs := f.answers()
	assert.Equal(t, map[uuid.UUID]string{yes: "See you there!"}, got)
	assert.Equal(t, 1, jobs)
	camp, err := f.st.Get(context.Background(), f.org, c)
	require.NoError(t, err)
	assert.EqualValues(t, 2, camp.ReplyCount, "the counter is the consumer's (processed events), not the answer's")
}

// A reply's answer is chosen on the consumer's own connection: with every connection of the
// pool held by consumers' transactions, the reply still gets its answer instead of waiting
// for a connection none of them will give back.
func TestAutoReplyNeedsNoSecondConnection(t *testing.T) {
	t.Parallel()
	f := newAutoReplyFixture(t)
	c, yes := f.campaign(true), uuid.New()
	one := pgtest.OneConnection(t, f.pool)
	f.st = store.New(one)
	r, err := New(Config{Pool: one, Schema: migrations.Schema, Store: f.st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	f.handle = EventHandler(f.st, r)
	f.receive(yes, SourceKind, c, uuid.NewString(), "affirmative", "Yes!")
	got, jobs := f.answers()
	assert.Equal(t, map[uuid.UUID]string{yes: "See you there!"}, got)
	assert.Equal(t, 1, jobs)
}

// Opt-outs, chatter, senders no contact has and campaigns without auto-replies get nothing;
// a contact gets each answer once; an answer to an auto-reply is the campaign's.
func TestAutoReplyChoosesWhatToAnswer(t *testing.T) {
	t.Parallel()
	f := newAutoReplyFixture(t)
	on, off, contact := f.campaign(true), f.campaign(false), uuid.NewString()
	stop, chat, stranger, quiet := uuid.New(), uuid.New(), uuid.New(), uuid.New()
	f.receive(stop, SourceKind, on, contact, "opt_out", "STOP")
	f.receive(chat, SourceKind, on, contact, "other", "thanks")
	f.receive(stranger, SourceKind, on, "", "affirmative", "yes")
	f.receive(quiet, SourceKind, off, contact, "affirmative", "yes")
	f.receive(uuid.New(), "reply", on, contact, "affirmative", "yes")
	got, jobs := f.answers()
	assert.Empty(t, got)
	assert.Zero(t, jobs)

	no, noAgain, question := uuid.New(), uuid.New(), uuid.New()
	f.receive(no, SourceKind, on, contact, "negative", "no")
	f.receive(noAgain, SourceKind, on, contact, "negative", "nope")
	f.receive(question, AutoReplySourceKind, on, contact, "question", "is there parking nearby?")
	got, jobs = f.answers()
	assert.Equal(t, map[uuid.UUID]string{no: "Maybe next time.", question: "Yes - behind the hall."}, got,
		"the second no gets nothing; the question answering the auto-reply gets the FAQ's answer, normalized")
	assert.Equal(t, 2, jobs)
}

// setStatus moves campaign id to status (canceled: completed with canceledAt).
func (f *autoReplyFixture) setStatus(id uuid.UUID, status string, canceled bool) {
	f.t.Helper()
	ctx := context.Background()
	require.NoError(f.t, f.st.InTx(ctx, func(tx pgx.Tx) error {
		c, err := f.st.Lock(ctx, tx, f.org, id)
		if err != nil {
			return err
		}
		c.Status = status
		if canceled {
			now := time.Now()
			c.CanceledAt, c.CompletedAt = &now, &now
		}
		return f.st.Save(ctx, tx, &c)
	}))
}

// A paused or canceled campaign chooses no answer for what comes meanwhile, and an answer
// chosen before waits while its campaign is paused (snoozed, no attempt used) and is skipped
// once it is canceled; one chosen while the campaign was sending goes once it is resumed.
func TestAutoReplyHeldWithItsCampaign(t *testing.T) {
	t.Parallel()
	f := newAutoReplyFixture(t)
	ctx := context.Background()
	c, contact := f.campaign(true), uuid.NewString()
	before := uuid.New()
	f.receive(before, SourceKind, c, contact, "affirmative", "yes")

	f.setStatus(c, store.StatusPaused, false)
	f.receive(uuid.New(), SourceKind, c, uuid.NewString(), "negative", "no")
	got, jobs := f.answers()
	assert.Equal(t, map[uuid.UUID]string{before: "See you there!"}, got, "nothing chosen while paused")
	assert.Equal(t, 1, jobs)
	r := &Runner{store: f.st}
	var snooze *river.JobSnoozeError
	require.ErrorAs(t, r.sendAutoReply(ctx, autoReplyArgs{OrgID: f.org, InboundID: before}), &snooze, "held while paused")
	a, err := f.st.AutoReply(ctx, f.org, before)
	require.NoError(t, err)
	assert.Equal(t, store.AutoReplyQueued, a.Status)

	f.setStatus(c, store.StatusCompleted, true)
	f.receive(uuid.New(), SourceKind, c, uuid.NewString(), "negative", "no")
	got, _ = f.answers()
	assert.Len(t, got, 1, "nothing chosen once canceled")
	require.NoError(t, r.sendAutoReply(ctx, autoReplyArgs{OrgID: f.org, InboundID: before}))
	a, err = f.st.AutoReply(ctx, f.org, before)
	require.NoError(t, err)
	assert.Equal(t, store.AutoReplySkipped, a.Status)
}
