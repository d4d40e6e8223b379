// Package sandbox delivers a text to the sandbox carrier's inbound webhook the way a carrier
// would: a Twilio-style form signed with the sandbox token. chorusctl's `sandbox inbound` and
// the end-to-end tests share it, so both exercise the path a real carrier takes.
package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/chorus-sms/chorus/pkg/twilio"
)

// InboundPath is the gateway route of the sandbox carrier's inbound texts.
const InboundPath = "/webhooks/sandbox/inbound"

// Text is one inbound message. Numbers are sent as given: a carrier sends E.164.
type Text struct {
	To, From, Body string
	Media          []string // public URLs; any makes it an MMS
}

// Form is the carrier's form for t under a fresh MessageSid ("SM" and 32 hex digits).
func (t Text) Form() (url.Values, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("message sid: %w", err)
	}
	form := url.Values{
		"MessageSid": {"SM" + hex.EncodeToString(b[:])},
		"AccountSid": {"ACsandbox"},
		"From":       {t.From},
		"To":         {t.To},
		"Body":       {t.Body},
		"NumMedia":   {strconv.Itoa(len(t.Media))},
	}
	for i, m := range t.Media {
		form.Set("MediaUrl"+strconv.Itoa(i), m)
	}
	return form, nil
}

// Post sends form to the inbound webhook under publicURL (the gateway's base URL), signed with
// token in X-Twilio-Signature. The caller closes the response body.
func Post(ctx context.Context, client *http.Client, publicURL, token string, form url.Values) (*http.Response, error) {
	full := strings.TrimRight(publicURL, "/") + InboundPath
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, full, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fmt.Errorf("sandbox inbound: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Twilio-Signature", twilio.Sign(token, full, form))
	res, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("sandbox inbound: %w", err)
	}
	return res, nil
}
