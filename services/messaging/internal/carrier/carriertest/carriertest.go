// Package carriertest holds what messaging's tests need of carriers: the contract every
// carrier keeps (Run, the one suite the sandbox and the Twilio adapter both pass), and a
// carrier of the test's own making behind the real Twilio adapter (Twilio): the carrier is
// the one part of a send that lies outside the machine.
package carriertest

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/twilio"
	"github.com/chorus-sms/chorus/services/messaging/internal/carrier"
)

// TwilioAuthToken is the auth token of the account Twilio's adapter uses, which signs Twilio's
// webhooks.
const TwilioAuthToken = "token"

// Twilio serves h as Twilio's API on a loopback port until the test ends, and returns the
// server and a Twilio adapter that calls it, one attempt per send.
func Twilio(t testing.TB, h http.HandlerFunc) (*httptest.Server, carrier.Provider) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	p, err := carrier.NewTwilio(twilio.Config{AccountSID: "ACtest", AuthToken: TwilioAuthToken, BaseURL: srv.URL, MaxAttempts: 1})
	require.NoError(t, err)
	return srv, p
}
