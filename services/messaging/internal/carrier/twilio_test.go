package carrier_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/twilio"
	"github.com/chorus-sms/chorus/services/messaging/internal/carrier"
	"github.com/chorus-sms/chorus/services/messaging/internal/carrier/carriertest"
)

// The Twilio adapter keeps the contract against a fake of Twilio's Messages API answering as
// Twilio does (pkg/twilio's Accept, Refuse and ServeList), its reports being Twilio's signed
// status callbacks.
func TestTwilioKeepsTheCarrierContract(t *testing.T) {
	carriertest.Run(t, carriertest.Harness{
		New:     newTwilio,
		To:      func(string) string { return "+14155550123" },
		Reports: twilioReports,
	})
}

// newTwilio is the Twilio adapter in front of a fake Twilio answering as a.
func newTwilio(t *testing.T, a carriertest.Answer) *carriertest.Carrier {
	var (
		mu       sync.Mutex
		received []carrier.Outgoing
		taken    []twilio.Message
	)
	_, p := carriertest.Twilio(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.Method == http.MethodGet {
			if !refuse(w, a) {
				twilio.ServeList(w, r, taken)
			}
			return
		}
		_ = r.ParseForm()
		received = append(received, sentAs(r.PostForm))
		switch a {
		case carriertest.Takes:
			sid := fmt.Sprintf("SM%032d", len(taken))
			taken = append(taken, twilio.Message{SID: sid, From: r.PostForm.Get("From"), To: r.PostForm.Get("To"),
				Body: r.PostForm.Get("Body"), Status: "queued", Direction: "outbound-api", DateCreated: time.Now().Format(twilio.DateLayout)})
			twilio.Accept(w, sid)
		case carriertest.Refuses:
			twilio.Refuse(w, http.StatusBadRequest, 21211, "Invalid 'To' Phone Number")
		case carriertest.RefusesOptedOut:
			twilio.Refuse(w, http.StatusBadRequest, 21610, "Attempt to send to unsubscribed recipient")
		case carriertest.Silent:
			// The request arrived; the connection drops before the answer.
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				_ = conn.Close()
			}
		default:
			refuse(w, a)
		}
	})
	return &carriertest.Carrier{
		Provider: p,
		Received: func() []carrier.Outgoing {
			mu.Lock()
			defer mu.Unlock()
			return append([]carrier.Outgoing(nil), received...)
		},
		Keeps: true,
	}
}

// refuse answers as Twilio does when it is down or refuses the account, reporting whether a
// is one of those.
func refuse(w http.ResponseWriter, a carriertest.Answer) bool {
	switch a {
	case carriertest.Busy:
		twilio.Refuse(w, http.StatusServiceUnavailable, 20503, "Service Unavailable")
	case carriertest.RefusesAccount:
		twilio.Refuse(w, http.StatusUnauthorized, 20003, "Authentication Error - invalid username")
	default:
		return false
	}
	return true
}

// sentAs reads a create request's form back as the message it asks for.
func sentAs(f url.Values) carrier.Outgoing {
	vp, _ := strconv.Atoi(f.Get("ValidityPeriod"))
	return carrier.Outgoing{
		From: f.Get("From"), To: f.Get("To"), Body: f.Get("Body"), MediaURLs: f["MediaUrl"],
		MMS: f.Get("SendAsMms") == "true" || len(f["MediaUrl"]) > 0, StatusCallbackURL: f.Get("StatusCallback"),
		ValidityPeriod: time.Duration(vp) * time.Second,
	}
}

// twilioReports are the callbacks Twilio posts to m's status callback as the message moves
// to sent then final, each signed, checked and read as the webhook does.
func twilioReports(t *testing.T, m carrier.Outgoing, acc carrier.Accepted, final string) []carrier.Status {
	var out []carrier.Status
	for _, s := range []string{"sent", final} {
		form := url.Values{"MessageSid": {acc.ProviderMessageID}, "MessageStatus": {s}, "From": {m.From}, "To": {m.To},
			"AccountSid": {"ACtest"}, "ApiVersion": {"2010-04-01"}}
		if s == carrier.StatusUndelivered || s == carrier.StatusFailed {
			form.Set("ErrorCode", "30003")
		}
		sig := twilio.Sign(carriertest.TwilioAuthToken, m.StatusCallbackURL, form)
		require.True(t, twilio.ValidSignature(carriertest.TwilioAuthToken, m.StatusCallbackURL, form, sig))
		require.False(t, twilio.ValidSignature("another token", m.StatusCallbackURL, form, sig))
		st, err := carrier.ParseTwilioStatus(form)
		require.NoError(t, err)
		out = append(out, st)
	}
	return out
}

// Twilio's statuses of a message we sent read as ours; those of inbound messages, or unknown
// ones, are refused naming the field.
func TestParseTwilioStatusNormalizes(t *testing.T) {
	for twilioStatus, want := range map[string]string{
		"accepted": carrier.StatusQueued, "scheduled": carrier.StatusQueued, "queued": carrier.StatusQueued,
		"sending": carrier.StatusQueued, "sent": carrier.StatusSent, "delivered": carrier.StatusDelivered,
		"read": carrier.StatusDelivered, "undelivered": carrier.StatusUndelivered, "failed": carrier.StatusFailed,
		"canceled": carrier.StatusFailed, "receiving": "", "received": "", "exploded": "",
	} {
		st, err := carrier.ParseTwilioStatus(url.Values{"MessageSid": {"SM1"}, "MessageStatus": {twilioStatus}})
		if want == "" {
			var fe *twilio.FieldError
			require.ErrorAs(t, err, &fe, twilioStatus)
			assert.Equal(t, "MessageStatus", fe.Field)
			continue
		}
		require.NoError(t, err, twilioStatus)
		assert.Equal(t, want, st.Status, twilioStatus)
	}
}

// A status callback for a recipient who unsubscribed is an opt-out, as a refusal is.
func TestParseTwilioStatusOptOut(t *testing.T) {
	st, err := carrier.ParseTwilioStatus(url.Values{"MessageSid": {"SM1"}, "MessageStatus": {"undelivered"}, "ErrorCode": {twilio.CodeUnsubscribed}})
	require.NoError(t, err)
	assert.Equal(t, carrier.Status{ProviderMessageID: "SM1", Status: carrier.StatusUndelivered, ErrorCode: "21610", OptOut: true}, st)
}

func TestParseTwilioInbound(t *testing.T) {
	in, err := carrier.ParseTwilioInbound(url.Values{"MessageSid": {"SM1"}, "From": {"+14155550123"}, "To": {"+14155550100"},
		"Body": {"STOP"}, "NumMedia": {"1"}, "MediaUrl0": {"https://api.twilio.com/m.jpg"}})
	require.NoError(t, err)
	assert.Equal(t, carrier.Inbound{ProviderMessageID: "SM1", From: "+14155550123", To: "+14155550100", Body: "STOP",
		MediaURLs: []string{"https://api.twilio.com/m.jpg"}}, in)
	_, err = carrier.ParseTwilioInbound(url.Values{"MessageSid": {"SM1"}, "From": {"nobody"}, "To": {"+14155550100"}})
	var fe *twilio.FieldError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "From", fe.Field)
}
