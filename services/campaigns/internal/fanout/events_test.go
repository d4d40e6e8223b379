package fanout

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/chorus-sms/chorus/pkg/outbox"
	"github.com/chorus-sms/chorus/pkg/pgdb"
	"github.com/chorus-sms/chorus/pkg/pgtest"
	eventsv1 "github.com/chorus-sms/chorus/proto/gen/go/events/v1"
	"github.com/chorus-sms/chorus/services/campaigns/internal/store"
	"github.com/chorus-sms/chorus/services/campaigns/migrations"
)

// A click on a campaign's short link counts for that campaign; a test copy's link, a reply's
// link and another organization's event naming the campaign count for none.
func TestLinkClicksCountForTheirCampaignOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := pgdb.Open(ctx, pgtest.NewDatabase(t), "campaigns")
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	require.NoError(t, pgdb.Migrate(ctx, pool, "campaigns", migrations.FS, migrations.With...))
	st := store.New(pool)
	org, now := uuid.New(), time.Now()
	c := store.Campaign{ID: uuid.New(), OrgID: org, Name: "c", Status: store.StatusSending, Channel: "text", ForceRoute: "AUTO", CreatedAt: now, UpdatedAt: now}
	require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error { return st.Insert(ctx, tx, &c) }))

	handle := EventHandler(st, nil)
	click := func(org uuid.UUID, kind, source string) {
		payload, err := proto.Marshal(&eventsv1.LinkClicked{OrganizationId: org.String(), Code: "aB3dE5gH", SourceKind: kind, SourceId: source})
		require.NoError(t, err)
		m := outbox.Message{EventID: uuid.New(), Type: "link.clicked", OrgID: org, Payload: payload}
		require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error { return handle(ctx, tx, m) }))
	}
	click(org, "campaign", c.ID.String())
	click(org, "campaign", c.ID.String())
	click(org, "test", c.ID.String())
	click(org, "reply", "")
	click(uuid.New(), "campaign", c.ID.String())
	click(org, "campaign", uuid.NewString()) // a campaign that does not exist

	got, err := st.Get(ctx, org, c.ID)
	require.NoError(t, err)
	assert.EqualValues(t, 2, got.ClickCount)
}

// A status event names its recipient's contact in the message's dedupe key; a key of another
// campaign, of another kind or malformed names none (the recipient is then found by phone).
func TestRecipientOfReadsTheDedupeKey(t *testing.T) {
	campaign, contact := uuid.New(), uuid.New()
	assert.Equal(t, contact, recipientOf(campaign, "campaign:"+campaign.String()+":"+contact.String()))
	for _, key := range []string{"", "campaign:" + uuid.NewString() + ":" + contact.String(), "auto_reply:" + contact.String(),
		"campaign:" + campaign.String() + ":", "campaign:" + campaign.String() + ":nope"} {
		assert.Equal(t, uuid.Nil, recipientOf(campaign, key), key)
	}
}
