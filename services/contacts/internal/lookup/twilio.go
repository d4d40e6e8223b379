package lookup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// TwilioDefaultBaseURL is the Twilio Lookup host.
const TwilioDefaultBaseURL = "https://lookups.twilio.com"

// TwilioConfig holds the credentials and host of Twilio Lookup v2.
type TwilioConfig struct {
	AccountSID string // CHORUS_TWILIO_ACCOUNT_SID
	AuthToken  string // CHORUS_TWILIO_AUTH_TOKEN
	BaseURL    string // CHORUS_TWILIO_LOOKUP_URL; TwilioDefaultBaseURL when empty
}

// Twilio asks Twilio Lookup v2 for the line type intelligence of a number: only a mobile line
// is textable.
type Twilio struct {
	base  string
	sid   string
	token string
	http  *http.Client
}

// NewTwilio checks cfg and returns the adapter.
func NewTwilio(cfg TwilioConfig) (*Twilio, error) {
	if cfg.AccountSID == "" || cfg.AuthToken == "" {
		return nil, errors.New("lookup: twilio needs CHORUS_TWILIO_ACCOUNT_SID and CHORUS_TWILIO_AUTH_TOKEN")
	}
	base := cfg.BaseURL
	if base == "" {
		base = TwilioDefaultBaseURL
	}
	if u, err := url.Parse(base); err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("lookup: CHORUS_TWILIO_LOOKUP_URL %q is not an absolute URL", base)
	}
	return &Twilio{
		base: strings.TrimRight(base, "/"), sid: cfg.AccountSID, token: cfg.AuthToken,
		http: &http.Client{Timeout: 10 * time.Second},
	}, nil
}

// twilioLookup is the part of a Lookup v2 response the adapter reads.
type twilioLookup struct {
	Valid                *bool `json:"valid"`
	LineTypeIntelligence *struct {
		Type      *string `json:"type"`
		ErrorCode *int    `json:"error_code"`
	} `json:"line_type_intelligence"`
}

// Textable implements Provider. Errors never carry the credentials: they are only in the
// Authorization header.
func (t *Twilio) Textable(ctx context.Context, e164 string) (bool, error) {
	endpoint := t.base + "/v2/PhoneNumbers/" + url.PathEscape(e164) + "?Fields=line_type_intelligence"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		return false, fmt.Errorf("twilio lookup: %w", err)
	}
	req.SetBasicAuth(t.sid, t.token)
	req.Header.Set("Accept", "application/json")
	res, err := t.http.Do(req)
	if err != nil {
		// Keep the URL, which holds the phone number, out of the error and so out of logs.
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return false, fmt.Errorf("twilio lookup: %w", err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return false, fmt.Errorf("twilio lookup: read response: %w", err)
	}
	switch {
	case res.StatusCode == http.StatusNotFound:
		// Twilio does not know the number: nothing can be sent to it.
		return false, nil
	case res.StatusCode == http.StatusUnauthorized || res.StatusCode == http.StatusForbidden:
		return false, fmt.Errorf("twilio lookup: HTTP %d: check CHORUS_TWILIO_ACCOUNT_SID and CHORUS_TWILIO_AUTH_TOKEN", res.StatusCode)
	case res.StatusCode != http.StatusOK:
		// 429 and 5xx are transient; the job retries with backoff.
		return false, fmt.Errorf("twilio lookup: HTTP %d: %s", res.StatusCode, twilioMessage(body))
	}
	var lk twilioLookup
	if err := json.Unmarshal(body, &lk); err != nil {
		return false, fmt.Errorf("twilio lookup: decode response: %w", err)
	}
	if lk.Valid != nil && !*lk.Valid {
		// An impossible number (too short, bad area code): nothing can be sent to it.
		return false, nil
	}
	lti := lk.LineTypeIntelligence
	if lti == nil || lti.Type == nil {
		code := 0
		if lti != nil && lti.ErrorCode != nil {
			code = *lti.ErrorCode
		}
		return false, fmt.Errorf("twilio lookup: no line type (error code %d): %w", code, ErrUndetermined)
	}
	// mobile is the one line type that reliably receives SMS; landline, fixedVoip,
	// nonFixedVoip, tollFree, personal, premium, sharedCost, uan, voicemail, pager and
	// unknown are treated as not textable.
	return *lti.Type == "mobile", nil
}

// twilioMessage is the message of a Twilio error body, for logs.
func twilioMessage(body []byte) string {
	var e struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &e) != nil || e.Message == "" {
		return "no error message"
	}
	return fmt.Sprintf("%s (code %d)", e.Message, e.Code)
}
