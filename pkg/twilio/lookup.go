package twilio

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

// DefaultLookupURL is the Twilio Lookup host.
const DefaultLookupURL = "https://lookups.twilio.com"

// LookupConfig holds the credentials and host of Twilio Lookup v2.
type LookupConfig struct {
	AccountSID string // CHORUS_TWILIO_ACCOUNT_SID
	AuthToken  string // CHORUS_TWILIO_AUTH_TOKEN
	BaseURL    string // CHORUS_TWILIO_LOOKUP_URL; DefaultLookupURL when empty
}

// ErrNoLineType means Lookup answered but could not tell the number's line type, so asking
// again will not help.
var ErrNoLineType = errors.New("no line type")

// Lookup asks Twilio Lookup v2 for the line type intelligence of a number: only a mobile line
// is textable.
type Lookup struct {
	base  string
	sid   string
	token string
	http  *http.Client
}

// NewLookup checks cfg and returns the client.
func NewLookup(cfg LookupConfig) (*Lookup, error) {
	if cfg.AccountSID == "" || cfg.AuthToken == "" {
		return nil, errors.New("lookup: twilio needs CHORUS_TWILIO_ACCOUNT_SID and CHORUS_TWILIO_AUTH_TOKEN")
	}
	base := cfg.BaseURL
	if base == "" {
		base = DefaultLookupURL
	}
	if u, err := url.Parse(base); err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("lookup: CHORUS_TWILIO_LOOKUP_URL %q is not an absolute URL", base)
	}
	return &Lookup{
		base: strings.TrimRight(base, "/"), sid: cfg.AccountSID, token: cfg.AuthToken,
		http: &http.Client{Timeout: 10 * time.Second},
	}, nil
}

// lookupAnswer is the part of a Lookup v2 response the adapter reads.
type lookupAnswer struct {
	Valid                *bool `json:"valid"`
	LineTypeIntelligence *struct {
		Type      *string `json:"type"`
		ErrorCode *int    `json:"error_code"`
	} `json:"line_type_intelligence"`
}

// Textable reports whether e164 is a mobile line; an error wrapping ErrNoLineType means
// Twilio could not tell. Errors never carry the credentials: they are only in the
// Authorization header.
func (t *Lookup) Textable(ctx context.Context, e164 string) (bool, error) {
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
		return false, fmt.Errorf("twilio lookup: HTTP %d: %s", res.StatusCode, errorMessage(body))
	}
	var lk lookupAnswer
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
		return false, fmt.Errorf("twilio lookup: %w (error code %d)", ErrNoLineType, code)
	}
	// mobile is the one line type that reliably receives SMS; landline, fixedVoip,
	// nonFixedVoip, tollFree, personal, premium, sharedCost, uan, voicemail, pager and
	// unknown are treated as not textable.
	return *lti.Type == "mobile", nil
}

// errorMessage is the message of a Twilio error body, for logs.
func errorMessage(body []byte) string {
	var e struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &e) != nil || e.Message == "" {
		return "no error message"
	}
	return fmt.Sprintf("%s (code %d)", e.Message, e.Code)
}
