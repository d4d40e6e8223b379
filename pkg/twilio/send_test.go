package twilio

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	testAccountSID = "ACaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	testAuthToken  = "secret-token"
	testSID        = "SM1f0e8ae6ade43cb3c0ce4525424e404f"
)

// createdBody is Twilio's answer to a message create, in the shape of the Message resource
// examples in Twilio's API reference.
const createdBody = `{
  "account_sid": "ACaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
  "api_version": "2010-04-01",
  "body": "Your table is ready",
  "date_created": "Thu, 24 Aug 2023 05:01:45 +0000",
  "date_sent": null,
  "date_updated": "Thu, 24 Aug 2023 05:01:45 +0000",
  "direction": "outbound-api",
  "error_code": null,
  "error_message": null,
  "from": "+14155550100",
  "messaging_service_sid": null,
  "num_media": "2",
  "num_segments": "1",
  "price": null,
  "price_unit": "USD",
  "sid": "SM1f0e8ae6ade43cb3c0ce4525424e404f",
  "status": "queued",
  "subresource_uris": {"media": "/2010-04-01/Accounts/ACaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/Messages/SM1f0e8ae6ade43cb3c0ce4525424e404f/Media.json"},
  "to": "+14155550123",
  "uri": "/2010-04-01/Accounts/ACaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/Messages/SM1f0e8ae6ade43cb3c0ce4525424e404f.json"
}`

// Error bodies as Twilio's REST API returns them.
const (
	unsubscribedBody = `{"code": 21610, "message": "Attempt to send to unsubscribed recipient", "more_info": "https://www.twilio.com/docs/errors/21610", "status": 400}`
	invalidToBody    = `{"code": 21211, "message": "Invalid 'To' Phone Number: +1415555XXXX", "more_info": "https://www.twilio.com/docs/errors/21211", "status": 400}`
	notMobileBody    = `{"code": 21614, "message": "'To' number is not a valid mobile number", "more_info": "https://www.twilio.com/docs/errors/21614", "status": 400}`
	authBody         = `{"code": 20003, "detail": "Your AccountSid or AuthToken was incorrect.", "message": "Authentication Error - invalid username", "more_info": "https://www.twilio.com/docs/errors/20003", "status": 401}`
	tooManyBody      = `{"code": 20429, "message": "Too Many Requests", "more_info": "https://www.twilio.com/docs/errors/20429", "status": 429}`
	serverErrorBody  = `{"code": 20500, "message": "Internal Server Error", "more_info": "https://www.twilio.com/docs/errors/20500", "status": 500}`
	unavailableBody  = `{"code": 20503, "message": "Service Unavailable", "more_info": "https://www.twilio.com/docs/errors/20503", "status": 503}`
)

var testMessage = SendRequest{
	From:           "+14155550100",
	To:             "+14155550123",
	Body:           "Your table is ready",
	MediaURLs:      []string{"https://cdn.example.com/a.jpg", "https://cdn.example.com/b.png"},
	StatusCallback: "https://hooks.example.com/twilio/status/0b9f3c1e-7d2a-4c8e-9a51-3f6d2b8e4a10",
}

// fakeTwilio is a local server speaking the Messages endpoint of Twilio's REST API. respond
// answers the n-th request (from 1) after its form has been recorded.
type fakeTwilio struct {
	*httptest.Server
	respond func(n int, w http.ResponseWriter, r *http.Request)

	mu       sync.Mutex
	forms    []url.Values
	arrivals []time.Time
}

func newFakeTwilio(t *testing.T, respond func(n int, w http.ResponseWriter, r *http.Request)) *fakeTwilio {
	t.Helper()
	f := &fakeTwilio{respond: respond}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, ok := r.BasicAuth()
		if r.Method != http.MethodPost || r.URL.Path != "/2010-04-01/Accounts/"+testAccountSID+"/Messages.json" ||
			!ok || user != testAccountSID || pass != testAuthToken ||
			r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
			t.Errorf("unexpected request %s %s (basic auth %q/%q)", r.Method, r.URL.Path, user, pass)
			http.Error(w, "unexpected request", http.StatusTeapot)
			return
		}
		if err := r.ParseForm(); err != nil {
			t.Errorf("parse form: %v", err)
		}
		f.mu.Lock()
		f.forms = append(f.forms, r.PostForm)
		f.arrivals = append(f.arrivals, time.Now())
		n := len(f.forms)
		f.mu.Unlock()
		f.respond(n, w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeTwilio) requests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.forms)
}

func reply(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

func newTestTwilio(t *testing.T, baseURL string, client *http.Client) *Client {
	t.Helper()
	tw, err := New(Config{
		AccountSID: testAccountSID,
		AuthToken:  testAuthToken,
		BaseURL:    baseURL,
		HTTPClient: client,
		Backoff:    time.Millisecond,
	})
	require.NoError(t, err)
	return tw
}

func TestSendPostsTheMessage(t *testing.T) {
	f := newFakeTwilio(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		reply(w, http.StatusCreated, createdBody)
	})

	sid, err := newTestTwilio(t, f.URL, nil).Send(t.Context(), testMessage)

	require.NoError(t, err)
	assert.Equal(t, testSID, sid)
	require.Equal(t, 1, f.requests())
	assert.Equal(t, url.Values{
		"To":             {testMessage.To},
		"From":           {testMessage.From},
		"Body":           {testMessage.Body},
		"MediaUrl":       testMessage.MediaURLs,
		"StatusCallback": {testMessage.StatusCallback},
	}, f.forms[0])
}

func TestSendOmitsEmptyOptionalFields(t *testing.T) {
	f := newFakeTwilio(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		reply(w, http.StatusCreated, createdBody)
	})

	_, err := newTestTwilio(t, f.URL, nil).Send(t.Context(), SendRequest{From: "+14155550100", To: "+14155550123", Body: "hi"})

	require.NoError(t, err)
	assert.Equal(t, url.Values{"To": {"+14155550123"}, "From": {"+14155550100"}, "Body": {"hi"}}, f.forms[0])
}

// An MMS without media asks Twilio for SendAsMms (else Twilio would send the text as SMS);
// one with media is an MMS anyway, and an SMS never carries the parameter.
func TestSendAsMmsWithoutMedia(t *testing.T) {
	f := newFakeTwilio(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		reply(w, http.StatusCreated, createdBody)
	})
	tw := newTestTwilio(t, f.URL, nil)
	for _, m := range []SendRequest{
		{From: "+14155550100", To: "+14155550123", Body: "hi", SendAsMMS: true},
		{From: "+14155550100", To: "+14155550123", Body: "hi", SendAsMMS: true, MediaURLs: []string{"https://example.com/a.png"}},
		{From: "+14155550100", To: "+14155550123", Body: "hi"},
	} {
		_, err := tw.Send(t.Context(), m)
		require.NoError(t, err)
	}
	require.Len(t, f.forms, 3)
	assert.Equal(t, "true", f.forms[0].Get("SendAsMms"))
	assert.NotContains(t, f.forms[1], "SendAsMms", "media makes it an MMS")
	assert.NotContains(t, f.forms[2], "SendAsMms")
}

// A bulk message's validity period ends when the quiet-hours window closes: Twilio gets it
// in whole seconds, rounded down, and not at all when it is no shorter than Twilio's default.
func TestSendValidityPeriod(t *testing.T) {
	f := newFakeTwilio(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		reply(w, http.StatusCreated, createdBody)
	})
	tw := newTestTwilio(t, f.URL, nil)
	for _, d := range []time.Duration{90*time.Minute + 999*time.Millisecond, 300 * time.Millisecond, 13 * time.Hour} {
		_, err := tw.Send(t.Context(), SendRequest{From: "+14155550100", To: "+14155550123", Body: "hi", ValidityPeriod: d})
		require.NoError(t, err)
	}
	require.Len(t, f.forms, 3)
	assert.Equal(t, "5400", f.forms[0].Get("ValidityPeriod"))
	assert.Equal(t, "1", f.forms[1].Get("ValidityPeriod"), "at least a second")
	assert.NotContains(t, f.forms[2], "ValidityPeriod", "longer than Twilio's 10-hour default")
}

func TestSendRejections(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		want   RejectedError
		status int
	}{
		{"unsubscribed recipient", unsubscribedBody,
			RejectedError{Code: "21610", Message: "Attempt to send to unsubscribed recipient"}, 400},
		{"invalid To", invalidToBody,
			RejectedError{Code: "21211", Message: "Invalid 'To' Phone Number: +1415555XXXX"}, 400},
		{"not a mobile number", notMobileBody,
			RejectedError{Code: "21614", Message: "'To' number is not a valid mobile number"}, 400},
		{"400 without a Twilio body", "<html>bad request</html>",
			RejectedError{Message: "400 Bad Request"}, 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeTwilio(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
				reply(w, tt.status, tt.body)
			})

			_, err := newTestTwilio(t, f.URL, nil).Send(t.Context(), testMessage)

			var rej *RejectedError
			require.ErrorAs(t, err, &rej)
			assert.Equal(t, tt.want, *rej)
			assert.NotErrorIs(t, err, ErrUnavailable)
			assert.NotErrorIs(t, err, ErrOutcomeUnknown)
			assert.Equal(t, 1, f.requests(), "a rejection is final")
		})
	}
}

func TestSendHonoursRetryAfter(t *testing.T) {
	f := newFakeTwilio(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			w.Header().Set("Retry-After", "1")
			reply(w, http.StatusTooManyRequests, tooManyBody)
			return
		}
		reply(w, http.StatusCreated, createdBody)
	})

	sid, err := newTestTwilio(t, f.URL, nil).Send(t.Context(), testMessage)

	require.NoError(t, err)
	assert.Equal(t, testSID, sid)
	require.Equal(t, 2, f.requests())
	assert.GreaterOrEqual(t, f.arrivals[1].Sub(f.arrivals[0]), time.Second)
}

func TestSendGivesUpWhenToldToWaitTooLong(t *testing.T) {
	f := newFakeTwilio(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "3600")
		reply(w, http.StatusTooManyRequests, tooManyBody)
	})

	start := time.Now()
	_, err := newTestTwilio(t, f.URL, nil).Send(t.Context(), testMessage)

	require.ErrorIs(t, err, ErrUnavailable)
	assert.Less(t, time.Since(start), time.Second)
	assert.Equal(t, 1, f.requests())
}

func TestSendRetriesServerErrors(t *testing.T) {
	f := newFakeTwilio(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n <= 2 {
			reply(w, http.StatusInternalServerError, serverErrorBody)
			return
		}
		reply(w, http.StatusCreated, createdBody)
	})

	sid, err := newTestTwilio(t, f.URL, nil).Send(t.Context(), testMessage)

	require.NoError(t, err)
	assert.Equal(t, testSID, sid)
	assert.Equal(t, 3, f.requests())
}

func TestSendUnavailableAfterMaxAttempts(t *testing.T) {
	f := newFakeTwilio(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		reply(w, http.StatusServiceUnavailable, unavailableBody)
	})

	_, err := newTestTwilio(t, f.URL, nil).Send(t.Context(), testMessage)

	require.ErrorIs(t, err, ErrUnavailable)
	assert.NotErrorIs(t, err, ErrOutcomeUnknown)
	var rej *RejectedError
	assert.False(t, errors.As(err, &rej))
	assert.ErrorContains(t, err, "503 Service Unavailable")
	assert.Equal(t, defaultMaxAttempts, f.requests())
}

func TestSendStopsRetryingWhenContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	f := newFakeTwilio(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		reply(w, http.StatusServiceUnavailable, unavailableBody)
	})
	// The caller gives up once the first answer is in, while Send waits to retry.
	client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := http.DefaultTransport.RoundTrip(r)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			resp.Body = io.NopCloser(bytes.NewReader(body))
			cancel()
		}
		return resp, err
	})}
	tw, err := New(Config{
		AccountSID: testAccountSID, AuthToken: testAuthToken, BaseURL: f.URL, HTTPClient: client, Backoff: time.Hour,
	})
	require.NoError(t, err)

	_, err = tw.Send(ctx, testMessage)

	require.ErrorIs(t, err, ErrUnavailable)
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 1, f.requests())
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestSendOutcomeUnknownWhenAnswerNeverComes(t *testing.T) {
	f := newFakeTwilio(t, func(_ int, _ http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // the form is read; hang until the client gives up
	})
	client := &http.Client{Timeout: 200 * time.Millisecond, Transport: &http.Transport{}}

	_, err := newTestTwilio(t, f.URL, client).Send(t.Context(), testMessage)

	require.ErrorIs(t, err, ErrOutcomeUnknown)
	assert.NotErrorIs(t, err, ErrUnavailable)
	assert.Equal(t, 1, f.requests(), "a request that may have been sent is never repeated")
}

func TestSendOutcomeUnknownWhenConnectionDropsAfterSending(t *testing.T) {
	f := newFakeTwilio(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			_ = conn.Close()
		}
	})

	_, err := newTestTwilio(t, f.URL, &http.Client{Transport: &http.Transport{}}).Send(t.Context(), testMessage)

	require.ErrorIs(t, err, ErrOutcomeUnknown)
	assert.Equal(t, 1, f.requests())
}

func TestSendOutcomeUnknownOnGatewayTimeout(t *testing.T) {
	f := newFakeTwilio(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		reply(w, http.StatusGatewayTimeout, "")
	})

	_, err := newTestTwilio(t, f.URL, nil).Send(t.Context(), testMessage)

	require.ErrorIs(t, err, ErrOutcomeUnknown)
	assert.Equal(t, 1, f.requests())
}

func TestSendOutcomeUnknownWhenAcceptedWithoutSID(t *testing.T) {
	f := newFakeTwilio(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		reply(w, http.StatusCreated, `{"status": "queued"}`)
	})

	_, err := newTestTwilio(t, f.URL, nil).Send(t.Context(), testMessage)

	require.ErrorIs(t, err, ErrOutcomeUnknown)
	assert.Equal(t, 1, f.requests())
}

func TestSendRetriesRefusedConnections(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())

	var dials atomic.Int32
	dialer := &net.Dialer{}
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, address string) (net.Conn, error) {
			dials.Add(1)
			return dialer.DialContext(ctx, network, address)
		},
	}}

	_, err = newTestTwilio(t, "http://"+addr, client).Send(t.Context(), testMessage)

	require.ErrorIs(t, err, ErrUnavailable)
	assert.NotErrorIs(t, err, ErrOutcomeUnknown)
	assert.ErrorContains(t, err, "connection refused")
	assert.Equal(t, int32(defaultMaxAttempts), dials.Load())
}

func TestSendBadCredentialsNotRetried(t *testing.T) {
	f := newFakeTwilio(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		reply(w, http.StatusUnauthorized, authBody)
	})

	_, err := newTestTwilio(t, f.URL, nil).Send(t.Context(), testMessage)

	require.ErrorIs(t, err, ErrMisconfigured)
	assert.ErrorContains(t, err, "20003")
	var rej *RejectedError
	assert.False(t, errors.As(err, &rej))
	assert.NotErrorIs(t, err, ErrUnavailable)
	assert.Equal(t, 1, f.requests())
}

func TestNewValidatesConfig(t *testing.T) {
	for name, cfg := range map[string]Config{
		"no account":       {AuthToken: "t"},
		"no token":         {AccountSID: testAccountSID},
		"relative URL":     {AccountSID: testAccountSID, AuthToken: "t", BaseURL: "api.example.com"},
		"other scheme":     {AccountSID: testAccountSID, AuthToken: "t", BaseURL: "ftp://api.example.com"},
		"negative attempt": {AccountSID: testAccountSID, AuthToken: "t", MaxAttempts: -1},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := New(cfg)
			assert.Error(t, err)
		})
	}

	tw, err := New(Config{AccountSID: testAccountSID, AuthToken: "t"})
	require.NoError(t, err)
	assert.Equal(t, "https://api.twilio.com/2010-04-01/Accounts/"+testAccountSID+"/Messages.json", tw.endpoint)
	assert.Equal(t, defaultMaxAttempts, tw.cfg.MaxAttempts)
}

func TestRetryAfter(t *testing.T) {
	assert.Equal(t, 2*time.Second, retryAfter("2"))
	assert.Equal(t, time.Duration(0), retryAfter(""))
	assert.Equal(t, time.Duration(0), retryAfter("-5"))
	assert.Equal(t, time.Duration(0), retryAfter("soon"))
	assert.Equal(t, 24*time.Hour, retryAfter("99999999999999"))
	at := time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat)
	assert.InDelta(t, 30*time.Second, retryAfter(at), float64(2*time.Second))
}

func TestBackoffDoublesWithJitter(t *testing.T) {
	tw := &Client{cfg: Config{Backoff: 200 * time.Millisecond}}
	for n, full := range map[int]time.Duration{1: 200 * time.Millisecond, 2: 400 * time.Millisecond, 3: 800 * time.Millisecond} {
		for range 100 {
			d := tw.backoff(n)
			require.GreaterOrEqual(t, d, full/2)
			require.LessOrEqual(t, d, full)
		}
	}
}
