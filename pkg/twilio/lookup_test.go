package twilio_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/twilio"
)

const (
	testSID   = "AC00000000000000000000000000000001"
	testToken = "super-secret-auth-token"
)

// lookupBody is a Lookup v2 response with line type intelligence, as Twilio sends it. An empty
// lineType is Twilio's answer when it cannot tell (type null, with an error code).
func lookupBody(number, lineType string) string {
	typ, errCode := `null`, `60600`
	if lineType != "" {
		typ, errCode = `"`+lineType+`"`, `null`
	}
	return `{
  "calling_country_code": "1",
  "country_code": "US",
  "phone_number": "` + number + `",
  "national_format": "(202) 555-0143",
  "valid": true,
  "validation_errors": [],
  "caller_name": null,
  "sim_swap": null,
  "call_forwarding": null,
  "line_status": null,
  "line_type_intelligence": {
    "carrier_name": "Verizon Wireless",
    "error_code": ` + errCode + `,
    "mobile_country_code": "310",
    "mobile_network_code": "456",
    "type": ` + typ + `
  },
  "identity_match": null,
  "reassigned_number": null,
  "sms_pumping_risk": null,
  "phone_number_quality_score": null,
  "pre_fill": null,
  "url": "https://lookups.twilio.com/v2/PhoneNumbers/` + number + `"
}`
}

// invalidBody is Lookup v2's answer for an impossible number.
const invalidBody = `{"calling_country_code": null, "country_code": null, "phone_number": "+1202555", ` +
	`"national_format": null, "valid": false, "validation_errors": ["TOO_SHORT"], "caller_name": null, ` +
	`"line_type_intelligence": null, "url": "https://lookups.twilio.com/v2/PhoneNumbers/+1202555"}`

// twilioError is Twilio's error body.
func twilioError(status, code int, msg string) string {
	return fmt.Sprintf(`{"code": %d, "message": %q, "more_info": "https://www.twilio.com/docs/errors/%d", "status": %d}`, code, msg, code, status)
}

func TestLookupLineTypes(t *testing.T) {
	t.Parallel()
	type reply struct {
		status int
		body   string
	}
	const number = "+12025550143"
	for _, tc := range []struct {
		name       string
		reply      reply
		want       bool
		wantErr    bool
		noLineType bool
	}{
		{"mobile", reply{200, lookupBody(number, "mobile")}, true, false, false},
		{"landline", reply{200, lookupBody(number, "landline")}, false, false, false},
		{"fixed VoIP", reply{200, lookupBody(number, "fixedVoip")}, false, false, false},
		{"non-fixed VoIP", reply{200, lookupBody(number, "nonFixedVoip")}, false, false, false},
		{"toll free", reply{200, lookupBody(number, "tollFree")}, false, false, false},
		{"personal", reply{200, lookupBody(number, "personal")}, false, false, false},
		{"unknown", reply{200, lookupBody(number, "unknown")}, false, false, false},
		{"invalid number", reply{200, invalidBody}, false, false, false},
		{"not found", reply{404, twilioError(404, 20404, "The requested resource /PhoneNumbers/+1202555 was not found")}, false, false, false},
		{"type undetermined", reply{200, lookupBody(number, "")}, false, true, true},
		{"rate limited", reply{429, twilioError(429, 20429, "Too Many Requests")}, false, true, false},
		{"server error", reply{503, twilioError(503, 20500, "Service Unavailable")}, false, true, false},
		{"bad credentials", reply{401, twilioError(401, 20003, "Authenticate")}, false, true, false},
		{"garbage", reply{200, `<html>`}, false, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				assert.Equal(t, http.MethodGet, r.Method)
				assert.Equal(t, "/v2/PhoneNumbers/"+number, r.URL.Path)
				assert.Equal(t, "line_type_intelligence", r.URL.Query().Get("Fields"))
				user, pass, ok := r.BasicAuth()
				assert.True(t, ok && user == testSID && pass == testToken, "basic auth with the account SID and token")
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.reply.status)
				_, _ = w.Write([]byte(tc.reply.body))
			}))
			defer srv.Close()
			tw, err := twilio.NewLookup(twilio.LookupConfig{AccountSID: testSID, AuthToken: testToken, BaseURL: srv.URL + "/"})
			require.NoError(t, err)

			got, err := tw.Textable(context.Background(), number)
			if !tc.wantErr {
				require.NoError(t, err)
				assert.Equal(t, tc.want, got)
				return
			}
			require.Error(t, err)
			assert.Equal(t, tc.noLineType, errors.Is(err, twilio.ErrNoLineType), "%v", err)
			assert.NotContains(t, err.Error(), testToken, "errors never carry the credentials")
			assert.NotContains(t, err.Error(), testSID)
		})
	}
}

func TestLookupNetworkErrorsAreRetryableAndQuiet(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL
	srv.Close() // nothing listens there any more
	tw, err := twilio.NewLookup(twilio.LookupConfig{AccountSID: testSID, AuthToken: testToken, BaseURL: base})
	require.NoError(t, err)
	_, err = tw.Textable(context.Background(), "+12025550143")
	require.Error(t, err)
	assert.False(t, errors.Is(err, twilio.ErrNoLineType), "worth a retry")
	assert.NotContains(t, err.Error(), "2025550143", "the number stays out of logs")
	assert.NotContains(t, err.Error(), testToken)
}

func TestLookupNeedsCredentialsAndAnAbsoluteURL(t *testing.T) {
	t.Parallel()
	_, err := twilio.NewLookup(twilio.LookupConfig{AccountSID: testSID})
	assert.ErrorContains(t, err, "CHORUS_TWILIO_AUTH_TOKEN")
	_, err = twilio.NewLookup(twilio.LookupConfig{AccountSID: testSID, AuthToken: testToken, BaseURL: "lookups.example"})
	assert.ErrorContains(t, err, "CHORUS_TWILIO_LOOKUP_URL")
}
