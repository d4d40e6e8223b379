package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/services/contacts/internal/store"
)

// The consent history's queries on the organization TestHotQueriesReadWhatTheyAskForBeforeTheOrganizationIsAnalyzed
// loads: a contact's page of history and an export of a date range must walk their indexes
// (the contact's entries in the order applied, the organization's by when they happened) and
// read what they return, not the organization's whole history, while the planner believes it
// holds one entry.

// Contact historyContact of the new organization opted out and in again historyChanges times
// besides its import's entry, half a day after the list was loaded.
const (
	historyContact = 4321
	historyChanges = 300
)

// fillConsent records for org's contact with phone a long history of changes besides its
// import's entry, which its row holds (fill sets its import_id), half a day after the list
// was loaded.
func fillConsent(ctx context.Context, pool *pgxpool.Pool, org uuid.UUID, phone string) error {
	_, err := pool.Exec(ctx, `
		INSERT INTO consent_events (organization_id, contact_id, occurred_at, recorded_at, opted_in, source, detail)
		SELECT c.organization_id, c.id, t, t, k % 2 = 0, 'keyword', CASE WHEN k % 2 = 0 THEN 'START' ELSE 'STOP' END
		FROM contacts c, generate_series(1, $3::int) AS k, LATERAL (SELECT c.created_at + interval '12 hours' + k * interval '1 s') AS e(t)
		WHERE c.organization_id = $1 AND c.phone = $2`, org, phone, historyChanges)
	return err
}

// consentCalls are the consent history's hot calls on o's new organization.
func consentCalls(o *unanalyzedOrg) []hotCall {
	ctx := context.Background()
	org := o.org
	const page = 50
	historyOf := func(t *testing.T) uuid.UUID { return o.contactID(t, historyContact) }
	// occurredAt is when the organization's consent_events entry n (oldest first) happened:
	// the history contact's changes, after every contact's creation.
	occurredAt := func(t *testing.T, n int) time.Time {
		var at time.Time
		require.NoError(t, o.pool.QueryRow(ctx, `SELECT occurred_at FROM consent_events WHERE organization_id = $1
			ORDER BY occurred_at, id OFFSET $2 LIMIT 1`, org, n).Scan(&at))
		return at
	}
	// An export of exported entries; each probes its contact for the phone, so it asks for
	// twice as many rows.
	const exported = 20
	return []hotCall{
		{"ConsentHistory, the first page", page + 1, func(t *testing.T, st *store.Store) {
			entries, more, err := st.ConsentHistory(ctx, org, historyOf(t), nil, page)
			require.NoError(t, err)
			assert.Len(t, entries, page)
			assert.True(t, more)
		}},
		{"ConsentHistory, a page after a cursor", page + 1, func(t *testing.T, st *store.Store) {
			contact := historyOf(t)
			var k store.HistoryKey
			require.NoError(t, o.pool.QueryRow(ctx, `SELECT recorded_at, id FROM consent_events
				WHERE organization_id = $1 AND contact_id = $2 ORDER BY recorded_at DESC, id DESC OFFSET 200 LIMIT 1`,
				org, contact).Scan(&k.At, &k.ID))
			entries, more, err := st.ConsentHistory(ctx, org, contact, &k, page)
			require.NoError(t, err)
			assert.Len(t, entries, page)
			assert.True(t, more)
		}},
		{"ExportConsent of a range", 2 * exported, func(t *testing.T, st *store.Store) {
			n := 0
			require.NoError(t, st.ExportConsent(ctx, org, occurredAt(t, 100), occurredAt(t, 100+exported), func(e store.ConsentEntry) error {
				n++
				assert.NotNil(t, e.Phone)
				return nil
			}))
			assert.Equal(t, exported, n)
		}},
	}
}
