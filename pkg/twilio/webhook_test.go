package twilio

import (
	"net/url"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Webhook bodies as Twilio posts them (application/x-www-form-urlencoded), with the parameter
// set of Twilio's incoming-message webhook and message status callback.
const (
	inboundSMSBody = "ToCountry=US&ToState=CA&SmsMessageSid=SM8c6e2b1f0d4a4e7b9c3d5f1a2b4c6d8e&NumMedia=0" +
		"&ToCity=SAN+FRANCISCO&FromZip=94105&SmsSid=SM8c6e2b1f0d4a4e7b9c3d5f1a2b4c6d8e&FromState=CA" +
		"&SmsStatus=received&FromCity=SAN+FRANCISCO&Body=STOP&FromCountry=US&To=%2B14155550100" +
		"&MessagingServiceSid=MGbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb&ToZip=94105&NumSegments=1" +
		"&MessageSid=SM8c6e2b1f0d4a4e7b9c3d5f1a2b4c6d8e&AccountSid=ACaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" +
		"&From=%2B14155550123&ApiVersion=2010-04-01"

	inboundMMSBody = "ToCountry=US&MediaContentType0=image%2Fjpeg&ToState=CA" +
		"&SmsMessageSid=MM3f1e2d4c5b6a798897a6b5c4d3e2f1a0&NumMedia=2&ToCity=SAN+FRANCISCO&FromZip=94105" +
		"&SmsSid=MM3f1e2d4c5b6a798897a6b5c4d3e2f1a0&FromState=CA&SmsStatus=received&FromCity=SAN+FRANCISCO" +
		"&Body=Here+is+the+receipt&FromCountry=US&To=%2B14155550100&ToZip=94105&NumSegments=1" +
		"&MediaContentType1=image%2Fpng&MessageSid=MM3f1e2d4c5b6a798897a6b5c4d3e2f1a0" +
		"&AccountSid=ACaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa&From=%2B14155550123" +
		"&MediaUrl0=https%3A%2F%2Fapi.twilio.com%2F2010-04-01%2FAccounts%2FACaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa%2FMessages%2FMM3f1e2d4c5b6a798897a6b5c4d3e2f1a0%2FMedia%2FME0a1b2c3d4e5f60718293a4b5c6d7e8f9" +
		"&MediaUrl1=https%3A%2F%2Fapi.twilio.com%2F2010-04-01%2FAccounts%2FACaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa%2FMessages%2FMM3f1e2d4c5b6a798897a6b5c4d3e2f1a0%2FMedia%2FME9f8e7d6c5b4a30291807f6e5d4c3b2a1" +
		"&ApiVersion=2010-04-01"

	deliveredBody = "SmsSid=SM1f0e8ae6ade43cb3c0ce4525424e404f&SmsStatus=delivered&MessageStatus=delivered" +
		"&To=%2B14155550123&MessageSid=SM1f0e8ae6ade43cb3c0ce4525424e404f" +
		"&AccountSid=ACaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa&From=%2B14155550100&ApiVersion=2010-04-01"

	undeliveredBody = "ErrorCode=30003&SmsSid=SM1f0e8ae6ade43cb3c0ce4525424e404f&SmsStatus=undelivered" +
		"&MessageStatus=undelivered&To=%2B14155550123&MessageSid=SM1f0e8ae6ade43cb3c0ce4525424e404f" +
		"&AccountSid=ACaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa&From=%2B14155550100&ApiVersion=2010-04-01"
)

func form(t *testing.T, body string) url.Values {
	t.Helper()
	v, err := url.ParseQuery(body)
	require.NoError(t, err)
	return v
}

func TestParseInboundSMS(t *testing.T) {
	in, err := ParseInbound(form(t, inboundSMSBody))

	require.NoError(t, err)
	assert.Equal(t, Inbound{
		MessageSID: "SM8c6e2b1f0d4a4e7b9c3d5f1a2b4c6d8e",
		From:       "+14155550123",
		To:         "+14155550100",
		Body:       "STOP",
	}, in)
}

func TestParseInboundMMS(t *testing.T) {
	in, err := ParseInbound(form(t, inboundMMSBody))

	require.NoError(t, err)
	assert.Equal(t, "MM3f1e2d4c5b6a798897a6b5c4d3e2f1a0", in.MessageSID)
	assert.Equal(t, "Here is the receipt", in.Body)
	assert.Equal(t, []string{
		"https://api.twilio.com/2010-04-01/Accounts/ACaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/Messages/MM3f1e2d4c5b6a798897a6b5c4d3e2f1a0/Media/ME0a1b2c3d4e5f60718293a4b5c6d7e8f9",
		"https://api.twilio.com/2010-04-01/Accounts/ACaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/Messages/MM3f1e2d4c5b6a798897a6b5c4d3e2f1a0/Media/ME9f8e7d6c5b4a30291807f6e5d4c3b2a1",
	}, in.MediaURLs)
}

func TestParseInboundLegacySid(t *testing.T) {
	f := form(t, inboundSMSBody)
	f.Del("MessageSid")

	in, err := ParseInbound(f)

	require.NoError(t, err)
	assert.Equal(t, "SM8c6e2b1f0d4a4e7b9c3d5f1a2b4c6d8e", in.MessageSID)
}

func TestParseInboundRejects(t *testing.T) {
	tests := map[string]func(url.Values){
		"no MessageSid":      func(f url.Values) { f.Del("MessageSid"); f.Del("SmsSid") },
		"no From":            func(f url.Values) { f.Del("From") },
		"no To":              func(f url.Values) { f.Del("To") },
		"NumMedia not a num": func(f url.Values) { f.Set("NumMedia", "two") },
		"NumMedia negative":  func(f url.Values) { f.Set("NumMedia", "-1") },
		"NumMedia too large": func(f url.Values) { f.Set("NumMedia", "1000000000") },
		"missing MediaUrl1":  func(f url.Values) { f.Del("MediaUrl1") },
		"long MessageSid":    func(f url.Values) { f.Set("MessageSid", "MM"+strings.Repeat("a", 5000)) },
		"MessageSid symbols": func(f url.Values) { f.Set("MessageSid", "MM'; DROP") },
		"long From":          func(f url.Values) { f.Set("From", "+1"+strings.Repeat("2", 5000)) },
		"From a name":        func(f url.Values) { f.Set("From", "ACME") },
		"To a short code":    func(f url.Values) { f.Set("To", "12345") },
		"long Body":          func(f url.Values) { f.Set("Body", strings.Repeat("é", MaxInboundBody+1)) },
		"MediaUrl a path":    func(f url.Values) { f.Set("MediaUrl0", "/etc/passwd") },
		"long MediaUrl":      func(f url.Values) { f.Set("MediaUrl0", "https://a.example/"+strings.Repeat("a", maxMediaURLLen)) },
	}
	for name, mutate := range tests {
		t.Run(name, func(t *testing.T) {
			f := form(t, inboundMMSBody)
			mutate(f)
			_, err := ParseInbound(f)
			var fe *FieldError
			assert.ErrorAs(t, err, &fe, "names the field")
		})
	}
}

func TestParseStatusCallback(t *testing.T) {
	st, err := ParseStatusCallback(form(t, deliveredBody))
	require.NoError(t, err)
	assert.Equal(t, StatusCallback{MessageSID: "SM1f0e8ae6ade43cb3c0ce4525424e404f", Status: "delivered"}, st)

	st, err = ParseStatusCallback(form(t, undeliveredBody))
	require.NoError(t, err)
	assert.Equal(t, StatusCallback{MessageSID: "SM1f0e8ae6ade43cb3c0ce4525424e404f", Status: "undelivered", ErrorCode: "30003"}, st)
}

func TestParseStatusCallbackLegacyFields(t *testing.T) {
	st, err := ParseStatusCallback(url.Values{"SmsSid": {"SM1"}, "SmsStatus": {"sent"}})

	require.NoError(t, err)
	assert.Equal(t, StatusCallback{MessageSID: "SM1", Status: "sent"}, st)
}

func TestParseStatusCallbackRejects(t *testing.T) {
	for name, f := range map[string]url.Values{
		"no status":          {"MessageSid": {"SM1"}},
		"no sid":             {"MessageStatus": {"delivered"}},
		"garbage error code": {"MessageSid": {"SM1"}, "MessageStatus": {"failed"}, "ErrorCode": {"30003; DROP"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseStatusCallback(f)
			assert.Error(t, err)
		})
	}
}

func FuzzParseInbound(f *testing.F) {
	for _, seed := range []string{inboundSMSBody, inboundMMSBody, "", "NumMedia=3&MediaUrl0=x", "MessageSid=a&From=b&To=c&NumMedia=-0"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		v, _ := url.ParseQuery(body) // keeps what parsed, as a server's form parser would
		in, err := ParseInbound(v)
		if err != nil {
			return
		}
		if in.MessageSID == "" || in.From == "" || in.To == "" {
			t.Fatalf("accepted without id, From or To: %+v", in)
		}
		if len(in.MediaURLs) > maxMedia || slices.Contains(in.MediaURLs, "") {
			t.Fatalf("bad media list %q", in.MediaURLs)
		}
		// What is accepted fits the columns and keys it is stored under.
		if len(in.MessageSID) > maxSIDLen || len(in.From) > maxAddressLen || len(in.To) > maxAddressLen ||
			utf8.RuneCountInString(in.Body) > MaxInboundBody {
			t.Fatalf("accepted an oversized field: %q %q %q (%d body characters)", in.MessageSID, in.From, in.To, len(in.Body))
		}
		for _, u := range in.MediaURLs {
			if len(u) > maxMediaURLLen || !(strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://")) {
				t.Fatalf("accepted media URL %q", u)
			}
		}
	})
}

func FuzzParseStatusCallback(f *testing.F) {
	for _, seed := range []string{deliveredBody, undeliveredBody, "", "SmsSid=x&SmsStatus=read", "MessageSid=x&MessageStatus=received"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		v, _ := url.ParseQuery(body)
		st, err := ParseStatusCallback(v)
		if err != nil {
			return
		}
		if st.MessageSID == "" || st.Status == "" ||
			strings.Trim(st.ErrorCode, "0123456789") != "" {
			t.Fatalf("accepted a bad status: %+v", st)
		}
	})
}

func TestParseInboundFromShortCode(t *testing.T) {
	in, err := ParseInbound(url.Values{"MessageSid": {"SM1"}, "From": {"72345"}, "To": {"+14155550100"}, "Body": {"HELP"}})

	require.NoError(t, err)
	assert.Equal(t, "72345", in.From)
}
