package gateway_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/chorus-sms/chorus/gateway"
	"github.com/chorus-sms/chorus/pkg/telemetry"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
)

// listPage is a contacts list page of 50 contacts with tags, as the contacts service answers
// GET /api/contacts?limit=50.
func listPage() *contactsv1.ListContactsResponse {
	at := timestamppb.New(time.Date(2026, 1, 2, 3, 4, 5, 678901000, time.UTC))
	res := &contactsv1.ListContactsResponse{Limit: 50, HasMore: true, SortBy: "updated_at", Cursor: "eyJvIjoiMDE5MGQxZjgtMDAwMC03MDAwLTgwMDAtMDAwMDAwMDAwMGMxIn0"}
	for i := range 50 {
		res.Contacts = append(res.Contacts, &contactsv1.ContactListItem{
			Id: fmt.Sprintf("0190d1f8-0000-7000-8000-%012d", i), Phone: fmt.Sprintf("+1202555%04d", i),
			FirstName: "Ada", LastName: "Lovelace", Email: fmt.Sprintf("ada%d@example.com", i),
			OrganizationId: "0190d1f8-0000-7000-8000-0000000000aa", City: "Boston", State: "MA", Zip: "02101",
			Tags: []string{"tag1", "tag2"}, Timezone: "America/New_York", IsTextable: wrapperspb.Bool(true), IsOptedIn: true,
			CreatedAt: at, UpdatedAt: at,
		})
	}
	return res
}

// BenchmarkListContacts is GET /api/contacts?limit=50 through the whole gateway (HTTP server,
// authentication, rate limit, access check, the gRPC call and the JSON answer) against a
// contacts stand-in answering a page of 50, logging as the product does. Its allocations
// count the client's and the stand-in's too, which this package does not change.
func BenchmarkListContacts(b *testing.B) {
	e := newEnv(b, func(c *gateway.Config) {
		c.RateLimit, c.RateBurst = 1_000_000, 1_000_000
		c.Logger = slog.New(telemetry.LogHandler(slog.NewJSONHandler(io.Discard, nil)))
	})
	e.contacts.answerPages(listPage())
	org := e.member("bench-reader", "read")
	req, err := http.NewRequest(http.MethodGet, e.url+"/api/contacts?limit=50", nil)
	require.NoError(b, err)
	req.Header.Set("Authorization", "Bearer "+e.token("bench-reader"))
	req.Header.Set("X-Organization-Id", org)
	get := func() {
		res, err := http.DefaultClient.Do(req)
		require.NoError(b, err)
		_, err = io.Copy(io.Discard, res.Body)
		require.NoError(b, err)
		require.NoError(b, res.Body.Close())
		require.Equal(b, http.StatusOK, res.StatusCode)
	}
	get() // the token verified, the access cached, the connections open
	b.ReportAllocs()
	for b.Loop() {
		get()
	}
}
