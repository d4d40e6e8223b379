package carrier

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/chorus-sms/chorus/pkg/twilioapi"
)

const (
	// findPageSize is how many messages one page of Twilio's Messages list carries.
	findPageSize = 50
	// findMaxPages bounds one lookup: between one of our numbers and one recipient there are
	// a handful of messages a day, so more pages than this mean the carrier's answer cannot be
	// told apart from ours, and the lookup says so instead of guessing.
	findMaxPages = 10
)

// Find implements Provider with Twilio's Messages list filtered by To and From, newest first,
// read until the messages are older than l.Since. The list's DateSent filter is not used:
// Twilio sets date_sent only once it sent the message, so a message it still holds in its
// queue would be missed and sent twice.
func (t *Twilio) Find(ctx context.Context, l Lookup) ([]Candidate, error) {
	next := t.endpoint + "?" + url.Values{"To": {l.To}, "From": {l.From}, "PageSize": {fmt.Sprint(findPageSize)}}.Encode()
	var out []Candidate
	for range findMaxPages {
		page, err := t.listPage(ctx, next)
		if err != nil {
			return nil, fmt.Errorf("twilio: look up message %s: %w", l.MessageID, err)
		}
		older := 0
		for _, m := range page.Messages {
			created, err := time.Parse(twilioapi.DateLayout, m.DateCreated)
			if err != nil {
				return nil, fmt.Errorf("twilio: look up message %s: date_created %q: %w", l.MessageID, m.DateCreated, err)
			}
			if created.Before(l.Since) {
				older++
				continue
			}
			if created.After(l.Until) || m.Direction != "outbound-api" || m.From != l.From || m.To != l.To {
				continue
			}
			status, err := normalizeTwilioStatus(m.Status)
			if err != nil {
				return nil, fmt.Errorf("twilio: look up message %s: status %q %w", l.MessageID, m.Status, err)
			}
			out = append(out, Candidate{ProviderMessageID: m.SID, Body: m.Body, Status: status, CreatedAt: created.UTC()})
		}
		if page.NextPageURI == "" || older == len(page.Messages) {
			return out, nil
		}
		next = t.base + page.NextPageURI
	}
	return nil, fmt.Errorf("twilio: look up message %s: %w: more than %d messages from %s to %s since %s",
		l.MessageID, ErrUnavailable, findMaxPages*findPageSize, l.From, l.To, l.Since.Format(time.RFC3339))
}

// listPage reads one page of the Messages list at pageURL.
func (t *Twilio) listPage(ctx context.Context, pageURL string) (twilioapi.Page, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, pageURL, nil)
	if err != nil {
		return twilioapi.Page{}, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(t.cfg.AccountSID, t.cfg.AuthToken)
	resp, err := t.cfg.HTTPClient.Do(req)
	if err != nil {
		return twilioapi.Page{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return twilioapi.Page{}, fmt.Errorf("%w: read list: %w", ErrUnavailable, err)
	}
	switch code := resp.StatusCode; {
	case code == http.StatusUnauthorized || code == http.StatusForbidden || code == http.StatusNotFound:
		return twilioapi.Page{}, fmt.Errorf("%w: %s%s", ErrMisconfigured, resp.Status, describeTwilioError(raw))
	case code < 200 || code >= 300:
		return twilioapi.Page{}, fmt.Errorf("%w: %s%s", ErrUnavailable, resp.Status, describeTwilioError(raw))
	}
	var page twilioapi.Page
	if err := json.Unmarshal(raw, &page); err != nil {
		return twilioapi.Page{}, fmt.Errorf("%w: list is not JSON: %w", ErrUnavailable, err)
	}
	if page.NextPageURI != "" && !strings.HasPrefix(page.NextPageURI, "/") {
		return twilioapi.Page{}, fmt.Errorf("%w: next page %q is not a path", ErrUnavailable, page.NextPageURI)
	}
	return page, nil
}
