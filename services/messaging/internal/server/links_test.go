package server_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/textlinks"
	eventsv1 "github.com/chorus-sms/chorus/proto/gen/go/events/v1"
	messagingv1 "github.com/chorus-sms/chorus/proto/gen/go/messaging/v1"
	"github.com/chorus-sms/chorus/services/messaging/internal/msgtest"
)

func (e *env) shorten(t *testing.T, org uuid.UUID, kind, id string, urls ...string) []string {
	t.Helper()
	res, err := e.msg.ShortenLinks(msgtest.As(context.Background(), org), &messagingv1.ShortenLinksRequest{SourceKind: kind, SourceId: id, Urls: urls})
	require.NoError(t, err)
	require.Len(t, res.GetShortUrls(), len(urls))
	return res.GetShortUrls()
}

// One link per (organization, source, URL): asked again, in another order, with repeats, or by
// several callers at once, the answer is the same link; another source or organization gets
// its own.
func TestShortenLinksIsOneCodePerSourceAndURL(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	campaign := uuid.NewString()
	const a, b = "https://example.com/a?x=1", "https://example.com/b"

	first := e.shorten(t, e.twilioOrg, "campaign", campaign, a, b, a)
	assert.Regexp(t, `^`+msgtest.PublicURL+`/l/[0-9A-Za-z]{8}$`, first[0])
	assert.NotEqual(t, first[0], first[1])
	assert.Equal(t, first[0], first[2], "a repeated URL has one link")
	assert.Equal(t, []string{first[1], first[0]}, e.shorten(t, e.twilioOrg, "campaign", campaign, b, a), "a retried call")

	var wg sync.WaitGroup
	answers := make([][]string, 6)
	for i := range answers {
		wg.Go(func() {
			res, err := e.msg.ShortenLinks(msgtest.As(context.Background(), e.twilioOrg), &messagingv1.ShortenLinksRequest{
				SourceKind: "campaign", SourceId: campaign, Urls: []string{"https://example.com/c", a, "https://example.com/d"}})
			if assert.NoError(t, err) {
				answers[i] = res.GetShortUrls()
			}
		})
	}
	wg.Wait()
	for _, got := range answers {
		assert.Equal(t, answers[0], got, "concurrent callers get the same links")
	}
	assert.Equal(t, first[0], answers[0][1])

	assert.NotEqual(t, first[0], e.shorten(t, e.twilioOrg, "test", campaign, a)[0], "the campaign's test copies")
	assert.NotEqual(t, first[0], e.shorten(t, e.twilioOrg, "campaign", uuid.NewString(), a)[0], "another campaign")
	assert.NotEqual(t, first[0], e.shorten(t, e.sbox, "campaign", campaign, a)[0], "another organization")
	var rows int
	require.NoError(t, e.db.QueryRow(context.Background(),
		`SELECT count(*) FROM short_links WHERE organization_id = $1 AND source_kind = 'campaign' AND source_id = $2`, e.twilioOrg, campaign).Scan(&rows))
	assert.Equal(t, 4, rows, "a, b, c and d")
}

// Following a source's link redirects to its URL and publishes link.clicked with the source,
// once per click, in the click's transaction.
func TestFollowingASourceLinkPublishesTheClick(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	campaign := uuid.NewString()
	short := e.shorten(t, e.twilioOrg, "campaign", campaign, "https://example.com/spring")[0]
	code := short[strings.LastIndex(short, "/")+1:]
	for range 2 {
		res, err := e.msg.FollowShortLink(context.Background(), &messagingv1.FollowShortLinkRequest{Code: code, UserAgent: "test"})
		require.NoError(t, err)
		assert.Equal(t, "https://example.com/spring", res.GetUrl())
	}
	rows, err := e.db.Query(context.Background(), `SELECT organization_id, payload FROM outbox WHERE event_type = 'link.clicked' ORDER BY event_id`)
	require.NoError(t, err)
	var clicks []*eventsv1.LinkClicked
	for rows.Next() {
		var org uuid.UUID
		var payload []byte
		require.NoError(t, rows.Scan(&org, &payload))
		assert.Equal(t, e.twilioOrg, org)
		var ev eventsv1.LinkClicked
		require.NoError(t, proto.Unmarshal(payload, &ev))
		clicks = append(clicks, &ev)
	}
	require.NoError(t, rows.Err())
	require.Len(t, clicks, 2, "one event per click")
	for _, ev := range clicks {
		assert.Equal(t, "campaign", ev.GetSourceKind())
		assert.Equal(t, campaign, ev.GetSourceId())
		assert.Equal(t, code, ev.GetCode())
		assert.Empty(t, ev.GetMessageId())
		assert.NotNil(t, ev.GetClickedAt())
		assert.Equal(t, "test", ev.GetUserAgent(), "the follower's user agent, for analytics")
	}

	_, err = e.msg.FollowShortLink(context.Background(), &messagingv1.FollowShortLinkRequest{Code: "ZZZZZZZZ"})
	assert.Equal(t, codes.NotFound, status.Code(err))
}

// Bad requests are refused naming the field, and nothing is stored.
func TestShortenLinksValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	many := make([]string, 1001)
	for i := range many {
		many[i] = fmt.Sprintf("https://example.com/%d", i)
	}
	for _, c := range []struct {
		req   *messagingv1.ShortenLinksRequest
		field string
	}{
		{&messagingv1.ShortenLinksRequest{SourceKind: "reply", SourceId: "x", Urls: []string{"https://x.io"}}, "sourceKind"},
		{&messagingv1.ShortenLinksRequest{SourceKind: "campaign", Urls: []string{"https://x.io"}}, "sourceId"},
		{&messagingv1.ShortenLinksRequest{SourceKind: "campaign", SourceId: "x"}, "urls"},
		{&messagingv1.ShortenLinksRequest{SourceKind: "campaign", SourceId: "x", Urls: many}, "urls"},
		{&messagingv1.ShortenLinksRequest{SourceKind: "campaign", SourceId: "x", Urls: []string{"https://x.io", "ftp://x.io/a"}}, "urls[1]"},
		{&messagingv1.ShortenLinksRequest{SourceKind: "campaign", SourceId: "x", Urls: []string{"example.com"}}, "urls[0]"},
		{&messagingv1.ShortenLinksRequest{SourceKind: "campaign", SourceId: "x", Urls: []string{"https://x.io/" + strings.Repeat("a", textlinks.MaxURLBytes)}}, "urls[0]"},
	} {
		_, err := e.msg.ShortenLinks(msgtest.As(context.Background(), e.twilioOrg), c.req)
		require.Equal(t, codes.InvalidArgument, status.Code(err), "%s: %v", c.field, err)
		assert.Contains(t, apierr.FieldViolations(err), c.field)
	}
	var rows int
	require.NoError(t, e.db.QueryRow(context.Background(), `SELECT count(*) FROM short_links`).Scan(&rows))
	assert.Zero(t, rows)
}
