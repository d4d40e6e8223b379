package twilio

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// listed renders one message of Twilio's Messages list, in the shape of its API reference.
func listed(sid, from, to, body, status, direction string, created time.Time) string {
	return fmt.Sprintf(`{"account_sid": %q, "sid": %q, "from": %q, "to": %q, "body": %q, "status": %q,
		"direction": %q, "date_created": %q, "date_sent": null, "num_segments": "1"}`,
		testAccountSID, sid, from, to, body, status, direction, created.UTC().Format(time.RFC1123Z))
}

// Sent reads Twilio's Messages list filtered by To and From, page after page (the next page
// named by next_page_uri), until the messages are older than the query's window, and answers
// the outbound messages created inside it.
func TestSentListsTheMessagesOfTheWindow(t *testing.T) {
	since := time.Date(2026, 11, 24, 3, 0, 0, 0, time.UTC)
	from, to := testMessage.From, testMessage.To
	pages := [][]string{
		{
			listed("SMlater", from, to, "tomorrow's", "queued", "outbound-api", since.Add(time.Hour)),
			listed("SMqueued", from, to, "still queued at Twilio", "queued", "outbound-api", since.Add(30*time.Second)),
		},
		{
			listed("SMreply", to, from, "inbound answer", "received", "inbound", since.Add(20*time.Second)),
			listed("SMdelivered", from, to, "Your table is ready", "delivered", "outbound-api", since.Add(10*time.Second)),
		},
		{listed("SMolder", from, to, "yesterday's", "delivered", "outbound-api", since.Add(-time.Hour))},
		{listed("SMnever", from, to, "a page Sent must not need", "delivered", "outbound-api", since.Add(-2*time.Hour))},
	}
	var asked []url.Values
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, ok := r.BasicAuth()
		if r.Method != http.MethodGet || r.URL.Path != "/2010-04-01/Accounts/"+testAccountSID+"/Messages.json" ||
			!ok || user != testAccountSID || pass != testAuthToken {
			t.Errorf("unexpected request %s %s", r.Method, r.URL)
			http.Error(w, "unexpected", http.StatusTeapot)
			return
		}
		q := r.URL.Query()
		asked = append(asked, q)
		var page int
		_, _ = fmt.Sscan(q.Get("Page"), &page)
		next := ""
		if page+1 < len(pages) {
			q.Set("Page", fmt.Sprint(page+1))
			next = fmt.Sprintf("%q", r.URL.Path+"?"+q.Encode())
		} else {
			next = "null"
		}
		reply(w, http.StatusOK, fmt.Sprintf(`{"messages": [%s], "next_page_uri": %s, "page": %d, "page_size": 50}`,
			strings.Join(pages[page], ","), next, page))
	}))
	defer srv.Close()

	got, err := newTestTwilio(t, srv.URL, nil).Sent(t.Context(), SentQuery{
		From: from, To: to, Since: since, Until: since.Add(2 * time.Minute),
	})
	require.NoError(t, err)
	assert.Equal(t, []SentMessage{
		{SID: "SMqueued", Body: "still queued at Twilio", Status: "queued", CreatedAt: since.Add(30 * time.Second)},
		{SID: "SMdelivered", Body: "Your table is ready", Status: "delivered", CreatedAt: since.Add(10 * time.Second)},
	}, got)
	require.Len(t, asked, 3, "the third page holds only older messages: no fourth is read")
	assert.Equal(t, to, asked[0].Get("To"))
	assert.Equal(t, from, asked[0].Get("From"))
	assert.Empty(t, asked[0].Get("DateSent"), "a message Twilio still queues has no date_sent: the filter would hide it")
}

// A list Twilio does not answer is an error, never an empty answer: an empty one would have
// the message sent again.
func TestSentFailsWhenTwilioCannotSay(t *testing.T) {
	for name, tc := range map[string]struct {
		status int
		body   string
		want   error
	}{
		"server error":  {http.StatusInternalServerError, serverErrorBody, ErrUnavailable},
		"rate limited":  {http.StatusTooManyRequests, tooManyBody, ErrUnavailable},
		"bad login":     {http.StatusUnauthorized, authBody, ErrMisconfigured},
		"not JSON":      {http.StatusOK, "<html>maintenance</html>", ErrUnavailable},
		"absolute next": {http.StatusOK, `{"messages": [], "next_page_uri": "https://elsewhere.example/x"}`, ErrUnavailable},
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { reply(w, tc.status, tc.body) }))
			defer srv.Close()
			got, err := newTestTwilio(t, srv.URL, nil).Sent(t.Context(), SentQuery{From: "+14155550100", To: "+14155550123", Since: time.Now()})
			assert.True(t, errors.Is(err, tc.want), "got %v", err)
			assert.Nil(t, got)
		})
	}
}
