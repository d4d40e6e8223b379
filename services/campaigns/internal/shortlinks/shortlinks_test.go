package shortlinks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// links stands in for messaging's ShortenLinks: one code per (source, URL) for as long as it
// lives, as messaging's table keeps them, and a record of every call.
type links struct {
	codes map[string]string
	calls [][]string
	err   error
}

func (l *links) ShortenLinks(_ context.Context, _ uuid.UUID, kind, id string, urls []string) ([]string, error) {
	if l.err != nil {
		return nil, l.err
	}
	l.calls = append(l.calls, urls)
	out := make([]string, len(urls))
	for i, u := range urls {
		key := kind + "/" + id + "/" + u
		if _, ok := l.codes[key]; !ok {
			l.codes[key] = fmt.Sprintf("https://s.co/l/%s%d", kind[:1], len(l.codes))
		}
		out[i] = l.codes[key]
	}
	return out, nil
}

func newLinks() *links { return &links{codes: map[string]string{}} }

// One batch of texts makes one call with each distinct address once; every text gets the
// same link for the same address, text around it kept; a text without address is untouched.
func TestRewriteAsksOnceForEachDistinctAddress(t *testing.T) {
	svc := newLinks()
	campaign := uuid.New()
	r := New(svc, uuid.New(), "campaign", campaign)
	texts := []string{
		"Hi Ada, menu: https://example.com/menu and www.example.com/menu!",
		"Hi Bo, menu: https://example.com/menu. Tickets (https://x.io/t)",
		"Hi Cy, no links here",
	}
	require.NoError(t, r.Rewrite(context.Background(), texts))
	assert.Equal(t, [][]string{{"https://example.com/menu", "https://www.example.com/menu", "https://x.io/t"}}, svc.calls)
	assert.Equal(t, []string{
		"Hi Ada, menu: https://s.co/l/c0 and https://s.co/l/c1!",
		"Hi Bo, menu: https://s.co/l/c0. Tickets (https://s.co/l/c2)",
		"Hi Cy, no links here",
	}, texts)

	// The next batch of the same fan-out asks only for what it has not seen.
	more := []string{"https://x.io/t again", "new: https://x.io/n"}
	require.NoError(t, r.Rewrite(context.Background(), more))
	assert.Equal(t, []string{"https://x.io/n"}, svc.calls[1])
	assert.Equal(t, []string{"https://s.co/l/c2 again", "new: https://s.co/l/c3"}, more)

	// Texts without addresses make no call at all.
	require.NoError(t, r.Rewrite(context.Background(), []string{"plain", ""}))
	assert.Len(t, svc.calls, 2)
}

// A restarted fan-out (a new Rewriter, nothing remembered) gets the same links from messaging;
// the campaign's test copies get links of their own.
func TestRestartedFanOutGetsTheSameLinks(t *testing.T) {
	svc := newLinks()
	org, campaign := uuid.New(), uuid.New()
	first := []string{"Go https://example.com/a"}
	require.NoError(t, New(svc, org, "campaign", campaign).Rewrite(context.Background(), first))
	again := []string{"Go https://example.com/a"}
	require.NoError(t, New(svc, org, "campaign", campaign).Rewrite(context.Background(), again))
	assert.Equal(t, first, again)
	test := []string{"Go https://example.com/a"}
	require.NoError(t, New(svc, org, "test", campaign).Rewrite(context.Background(), test))
	assert.NotEqual(t, first, test, "a test copy's link counts for no campaign")
	assert.True(t, strings.HasPrefix(test[0], "Go https://s.co/l/t"), test[0])
}

// More distinct addresses than one call carries go in calls of at most 1000.
func TestRewriteBatchesManyAddresses(t *testing.T) {
	svc := newLinks()
	texts := make([]string, 2500)
	for i := range texts {
		texts[i] = fmt.Sprintf("yours: https://example.com/u/%d", i)
	}
	require.NoError(t, New(svc, uuid.New(), "campaign", uuid.New()).Rewrite(context.Background(), texts))
	require.Len(t, svc.calls, 3)
	assert.Len(t, svc.calls[0], 1000)
	assert.Len(t, svc.calls[2], 500)
	assert.Equal(t, "yours: https://s.co/l/c2499", texts[2499])
}

// When messaging cannot answer, no text is changed and the error says so.
func TestRewriteFailureLeavesTextsAlone(t *testing.T) {
	svc := newLinks()
	svc.err = errors.New("unavailable")
	texts := []string{"see https://example.com/a"}
	err := New(svc, uuid.New(), "campaign", uuid.New()).Rewrite(context.Background(), texts)
	require.ErrorContains(t, err, "unavailable")
	assert.Equal(t, "see https://example.com/a", texts[0])
}
