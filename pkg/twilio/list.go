package twilio

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

const (
	// findPageSize is how many messages one page of the Messages list Sent reads carries.
	findPageSize = 50
	// findMaxPages bounds one lookup: between one of our numbers and one recipient there are
	// a handful of messages a day, so more pages than this mean the carrier's answer cannot be
	// told apart from ours, and the lookup says so instead of guessing.
	findMaxPages = 10
)

// DateLayout is how Twilio writes a message's date_created.
const DateLayout = time.RFC1123Z

// Message is one message of the Messages list (GET .../Messages.json), with the fields
// Chorus reads.
type Message struct {
	SID         string `json:"sid"`
	From        string `json:"from"`
	To          string `json:"to"`
	Body        string `json:"body"`
	Status      string `json:"status"`
	Direction   string `json:"direction"` // "outbound-api" for a message created through the API
	DateCreated string `json:"date_created"`
}

// Page is one page of the list; NextPageURI is the path (and query) of the next page, empty
// on the last.
type Page struct {
	Messages    []Message `json:"messages"`
	NextPageURI string    `json:"next_page_uri"`
}

// SentQuery asks which messages were created through the API from From to To between Since
// and Until.
type SentQuery struct {
	From, To     string // E.164
	Since, Until time.Time
}

// SentMessage is a message created through the API, as Sent answers it.
type SentMessage struct {
	SID       string
	Body      string
	Status    string // Twilio's message status
	CreatedAt time.Time
}

// Sent reads the Messages list filtered by To and From, newest first, until the messages are
// older than q.Since, and answers those q asks for, newest first. The list's DateSent filter is not used:
// Twilio sets date_sent only once it sent the message, so a message it still holds in its
// queue would be missed. It fails with ErrUnavailable or ErrMisconfigured when Twilio cannot
// say, never with an empty answer.
func (c *Client) Sent(ctx context.Context, q SentQuery) ([]SentMessage, error) {
	next := c.endpoint + "?" + url.Values{"To": {q.To}, "From": {q.From}, "PageSize": {fmt.Sprint(findPageSize)}}.Encode()
	var out []SentMessage
	for range findMaxPages {
		page, err := c.listPage(ctx, next)
		if err != nil {
			return nil, err
		}
		older := 0
		for _, m := range page.Messages {
			created, err := time.Parse(DateLayout, m.DateCreated)
			if err != nil {
				return nil, fmt.Errorf("date_created %q: %w", m.DateCreated, err)
			}
			if created.Before(q.Since) {
				older++
				continue
			}
			if created.After(q.Until) || m.Direction != "outbound-api" || m.From != q.From || m.To != q.To {
				continue
			}
			out = append(out, SentMessage{SID: m.SID, Body: m.Body, Status: m.Status, CreatedAt: created.UTC()})
		}
		if page.NextPageURI == "" || older == len(page.Messages) {
			return out, nil
		}
		next = c.base + page.NextPageURI
	}
	return nil, fmt.Errorf("%w: more than %d messages from %s to %s since %s",
		ErrUnavailable, findMaxPages*findPageSize, q.From, q.To, q.Since.Format(time.RFC3339))
}

// listPage reads one page of the Messages list at pageURL.
func (c *Client) listPage(ctx context.Context, pageURL string) (Page, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, pageURL, nil)
	if err != nil {
		return Page{}, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(c.cfg.AccountSID, c.cfg.AuthToken)
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		return Page{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return Page{}, fmt.Errorf("%w: read list: %w", ErrUnavailable, err)
	}
	switch code := resp.StatusCode; {
	case code == http.StatusUnauthorized || code == http.StatusForbidden || code == http.StatusNotFound:
		return Page{}, fmt.Errorf("%w: %s%s", ErrMisconfigured, resp.Status, describeError(raw))
	case code < 200 || code >= 300:
		return Page{}, fmt.Errorf("%w: %s%s", ErrUnavailable, resp.Status, describeError(raw))
	}
	var page Page
	if err := json.Unmarshal(raw, &page); err != nil {
		return Page{}, fmt.Errorf("%w: list is not JSON: %w", ErrUnavailable, err)
	}
	if page.NextPageURI != "" && !strings.HasPrefix(page.NextPageURI, "/") {
		return Page{}, fmt.Errorf("%w: next page %q is not a path", ErrUnavailable, page.NextPageURI)
	}
	return page, nil
}
