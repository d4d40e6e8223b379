package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/services/contacts/internal/store"
)

// exportPlanBatch is the export's batch size in the plan test: small, so a batch reading the
// organization would exceed its budget by far.
const exportPlanBatch = 50

// importedHistoryCalls are the consent history's hot calls on o's new organization that read
// imported contacts' creation entries from the contacts (their import_id) beside
// consent_events: a contact's history probes its row, and an export's batch walks
// contacts_org_created from its key.
func importedHistoryCalls(o *unanalyzedOrg) []hotCall {
	ctx := context.Background()
	org := o.org
	createdAt := func(t *testing.T, i int) time.Time {
		t.Helper()
		var at time.Time
		require.NoError(t, o.pool.QueryRow(ctx, `SELECT created_at FROM contacts WHERE organization_id = $1 AND phone = $2`,
			org, newPhone(i)).Scan(&at))
		return at
	}
	// Contact 777 opted out after its import (once, through the untraced pool): its history is
	// the opt-out, then its creation. Its id and the opt-out's key are returned.
	optedOut := func(t *testing.T) (uuid.UUID, store.HistoryKey) {
		t.Helper()
		_, err := o.pool.Exec(ctx, `
			WITH c AS (
				UPDATE contacts SET is_opted_in = false, opted_out_at = now()
				WHERE organization_id = $1 AND phone = $2 AND is_opted_in RETURNING organization_id, id
			)
			INSERT INTO consent_events (organization_id, contact_id, occurred_at, opted_in, source, detail)
			SELECT organization_id, id, now(), false, 'keyword', 'STOP' FROM c`, org, newPhone(777))
		require.NoError(t, err)
		var (
			id  uuid.UUID
			key store.HistoryKey
		)
		require.NoError(t, o.pool.QueryRow(ctx, `SELECT contact_id, recorded_at, id FROM consent_events
			WHERE organization_id = $1 AND contact_id = (SELECT id FROM contacts WHERE organization_id = $1 AND phone = $2)`,
			org, newPhone(777)).Scan(&id, &key.At, &key.ID))
		return id, key
	}
	return []hotCall{
		{"ConsentHistory of an imported contact", 2, func(t *testing.T, st *store.Store) {
			id, _ := optedOut(t)
			entries, more, err := st.ConsentHistory(ctx, org, id, nil, 50)
			require.NoError(t, err)
			assert.False(t, more)
			require.Len(t, entries, 2)
			assert.Equal(t, []string{"keyword", store.SourceImport}, []string{entries[0].Source, entries[1].Source})
		}},
		{"ConsentHistory of an imported contact, after a cursor", 2, func(t *testing.T, st *store.Store) {
			id, stop := optedOut(t)
			entries, more, err := st.ConsentHistory(ctx, org, id, &stop, 1)
			require.NoError(t, err)
			assert.False(t, more)
			require.Len(t, entries, 1)
			assert.Equal(t, store.SourceImport, entries[0].Source)
		}},
		{"ExportConsent, batches among imported contacts", exportPlanBatch, func(t *testing.T, st *store.Store) {
			store.SetExportBatch(st, exportPlanBatch)
			n := 0
			err := st.ExportConsent(ctx, org, createdAt(t, 5001), createdAt(t, 5001+3*exportPlanBatch), func(e store.ConsentEntry) error {
				n++
				assert.Equal(t, store.SourceImport, e.Source)
				return nil
			})
			require.NoError(t, err)
			assert.Equal(t, 3*exportPlanBatch, n, "the contacts created in the range")
		}},
	}
}
