package dispatch

import (
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	eventsv1 "github.com/chorus-sms/chorus/proto/gen/go/events/v1"
	"github.com/chorus-sms/chorus/services/messaging/internal/carrier"
	"github.com/chorus-sms/chorus/services/messaging/internal/store"
)

// Changes made together are published several to an event, per organization and in order; a
// poll's messages keep an event each, so polls can order them with the contact's replies.
func TestStatusEventsCarrySeveralChangesPerOrganization(t *testing.T) {
	a, b := uuid.New(), uuid.New()
	var changes []statusChange
	add := func(org uuid.UUID, kind string, n int) {
		for range n {
			m := store.Message{ID: uuid.New(), OrgID: org, SourceKind: kind, ContactPhone: fmt.Sprintf("+1202555%04d", len(changes))}
			changes = append(changes, statusChange{m, carrier.Status{Status: carrier.StatusSent}})
		}
	}
	add(a, store.SourceCampaign, changesPerEvent+10)
	add(b, store.SourceCampaign, 3)
	add(a, store.SourcePoll, 2)
	add(a, store.SourceCampaign, 5)

	events := statusEvents(changes)
	var got []string
	seen := map[string]bool{}
	for _, ev := range events {
		switch p := ev.Payload.(type) {
		case *eventsv1.MessagesStatusChanged:
			require.Equal(t, EventStatusesChanged, ev.Type)
			got = append(got, fmt.Sprintf("%s:%d", orgName(ev.OrgID, a), len(p.GetChanges())))
			for _, c := range p.GetChanges() {
				assert.Equal(t, ev.OrgID.String(), c.GetOrganizationId())
				seen[c.GetMessageId()] = true
			}
		case *eventsv1.MessageStatusChanged:
			require.Equal(t, EventStatusChanged, ev.Type)
			assert.Equal(t, store.SourcePoll, p.GetSourceKind())
			got = append(got, "poll")
			seen[p.GetMessageId()] = true
		}
	}
	assert.Equal(t, []string{"a:250", "a:15", "b:3", "poll", "poll"}, got)
	assert.Len(t, seen, len(changes), "every change published once")
}

func orgName(org, a uuid.UUID) string {
	if org == a {
		return "a"
	}
	return "b"
}
