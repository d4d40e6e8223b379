package gateway_test

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chorus-sms/chorus/gateway"
	"github.com/chorus-sms/chorus/pkg/apierr"
	messagingv1 "github.com/chorus-sms/chorus/proto/gen/go/messaging/v1"
)

const formType = "application/x-www-form-urlencoded"

// postForm posts body to path as a carrier would: no token, no organization header.
func (e *env) postForm(path, contentType string, body io.Reader, header http.Header) response {
	e.t.Helper()
	h := http.Header{"Content-Type": {contentType}}
	for k, vs := range header {
		h[k] = vs
	}
	return e.do(request{method: http.MethodPost, path: path, body: body, header: h})
}

func TestInboundWebhookReachesTheServiceAsReceived(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	body := "To=%2B12025550143&From=%2B13125550100&Body=Hi+there%21&NumMedia=1&MediaUrl0=https%3A%2F%2Fm.test%2Fa.jpg&Body=second"
	res := e.postForm("/webhooks/sandbox/inbound?tenant=a%20b&x=1", formType+"; charset=utf-8", strings.NewReader(body),
		http.Header{"X-Twilio-Signature": {"c2lnbmF0dXJl"}, "X-Request-Id": {"req-hook-1"}})
	require.Equal(t, http.StatusOK, res.status, "%s", res.body)
	assert.Equal(t, "text/xml", res.header.Get("Content-Type"), "the service's answer goes back as is")
	assert.Equal(t, "<Response></Response>", string(res.body))
	assert.Equal(t, "req-hook-1", res.header.Get("X-Request-Id"))

	got := e.messaging.lastWebhook()
	require.NotNil(t, got)
	assert.Equal(t, "sandbox", got.GetProvider())
	assert.Equal(t, messagingv1.WebhookKind_WEBHOOK_KIND_INBOUND, got.GetKind())
	assert.Equal(t, "/webhooks/sandbox/inbound?tenant=a%20b&x=1", got.GetPathAndQuery(), "path and query exactly as sent: they are signed")
	assert.Equal(t, "c2lnbmF0dXJl", got.GetSignature())
	params := make([][2]string, 0, len(got.GetParams()))
	for _, p := range got.GetParams() {
		params = append(params, [2]string{p.GetKey(), p.GetValue()})
	}
	assert.Equal(t, [][2]string{
		{"To", "+12025550143"}, {"From", "+13125550100"}, {"Body", "Hi there!"}, {"NumMedia", "1"},
		{"MediaUrl0", "https://m.test/a.jpg"}, {"Body", "second"},
	}, params, "body fields decoded, in order, repeats kept; query fields are not form fields")
	_, md := e.messaging.calls()
	assert.Equal(t, []string{"req-hook-1"}, md.Get("x-request-id"))
	assert.Empty(t, md.Get("x-chorus-org"), "no organization travels with a webhook")

	res = e.postForm("/webhooks/twilio/status", formType, strings.NewReader("MessageSid=SM1&MessageStatus=delivered"), nil)
	require.Equal(t, http.StatusOK, res.status, "%s", res.body)
	got = e.messaging.lastWebhook()
	assert.Equal(t, "twilio", got.GetProvider())
	assert.Equal(t, messagingv1.WebhookKind_WEBHOOK_KIND_STATUS, got.GetKind())
	assert.Empty(t, got.GetSignature(), "a missing signature is the service's to refuse")

	metrics := string(e.do(request{method: http.MethodGet, path: "/metrics"}).body)
	assert.Contains(t, metrics, `chorus_gateway_http_requests_total{method="POST",route="/webhooks/{provider}/inbound",status="200"} 1`)
	assert.Contains(t, metrics, `chorus_gateway_http_requests_total{method="POST",route="/webhooks/{provider}/status",status="200"} 1`)
	assert.Contains(t, e.logs.String(), `"route":"/webhooks/{provider}/inbound"`)
}

func TestWebhookServiceErrorsUseTheSharedBody(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.messaging.fail("forged", apierr.New(codes.PermissionDenied, "FORBIDDEN", "the signature does not match"))
	e.messaging.fail("unknown", apierr.NotFound("no such provider"))
	e.messaging.fail("invalid", apierr.Field("To", "is not a number of any organization"))
	e.messaging.fail("broken", status.Error(codes.Internal, "pq: relation does not exist"))
	cases := []struct {
		provider string
		status   int
		code     string
	}{
		{"forged", http.StatusForbidden, "FORBIDDEN"},
		{"unknown", http.StatusNotFound, "NOT_FOUND"},
		{"invalid", http.StatusBadRequest, "VALIDATION_FAILED"},
		{"broken", http.StatusInternalServerError, "INTERNAL"},
	}
	for _, tc := range cases {
		t.Run(tc.provider, func(t *testing.T) {
			res := e.postForm("/webhooks/"+tc.provider+"/inbound", formType, strings.NewReader("To=%2B12025550143"), nil)
			require.Equal(t, tc.status, res.status, "%s", res.body)
			body := res.apiErr(t)
			assert.Equal(t, tc.code, body["code"])
			assert.Equal(t, res.header.Get("X-Request-Id"), body["requestId"])
			assert.NotContains(t, string(res.body), "pq:", "internal text stays inside")
		})
	}
}

// TestWebhookRequestsRefusedBeforeTheService covers what the gateway refuses itself; none of
// it reaches the messaging service.
func TestWebhookRequestsRefusedBeforeTheService(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	overLimit := "Body=" + strings.Repeat("x", 64<<10)
	cases := []struct {
		name        string
		method      string
		path        string
		contentType string
		body        io.Reader
		status      int
		code        string
	}{
		{"GET", http.MethodGet, "/webhooks/sandbox/inbound", "", nil, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED"},
		{"PUT", http.MethodPut, "/webhooks/sandbox/status", formType, strings.NewReader("a=b"), http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED"},
		{"JSON body", http.MethodPost, "/webhooks/sandbox/inbound", "application/json", strings.NewReader(`{"To":"+1"}`), http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE"},
		{"no content type", http.MethodPost, "/webhooks/sandbox/inbound", "", strings.NewReader("To=1"), http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE"},
		{"declared length over 64 KiB", http.MethodPost, "/webhooks/sandbox/inbound", formType, strings.NewReader(overLimit), http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE"},
		{"chunked body over 64 KiB", http.MethodPost, "/webhooks/sandbox/inbound", formType, lengthless{strings.NewReader(overLimit)}, http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE"},
		{"malformed escape", http.MethodPost, "/webhooks/sandbox/inbound", formType, strings.NewReader("Body=%zz"), http.StatusBadRequest, "VALIDATION_FAILED"},
		{"not UTF-8", http.MethodPost, "/webhooks/sandbox/inbound", formType, strings.NewReader("Body=%FF%FE"), http.StatusBadRequest, "VALIDATION_FAILED"},
		{"semicolon separator", http.MethodPost, "/webhooks/sandbox/inbound", formType, strings.NewReader("a=1;b=2"), http.StatusBadRequest, "VALIDATION_FAILED"},
		{"provider not lowercase letters", http.MethodPost, "/webhooks/Twilio/inbound", formType, strings.NewReader("a=1"), http.StatusNotFound, "NOT_FOUND"},
		{"provider with digits", http.MethodPost, "/webhooks/tw1lio/inbound", formType, strings.NewReader("a=1"), http.StatusNotFound, "NOT_FOUND"},
		{"unknown kind", http.MethodPost, "/webhooks/sandbox/other", formType, strings.NewReader("a=1"), http.StatusNotFound, "NOT_FOUND"},
		{"extra segment", http.MethodPost, "/webhooks/sandbox/inbound/x", formType, strings.NewReader("a=1"), http.StatusNotFound, "NOT_FOUND"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			if tc.contentType != "" {
				h.Set("Content-Type", tc.contentType)
			}
			res := e.do(request{method: tc.method, path: tc.path, body: tc.body, header: h})
			require.Equal(t, tc.status, res.status, "%s", res.body)
			assert.Equal(t, tc.code, res.apiErr(t)["code"])
			if tc.status == http.StatusMethodNotAllowed {
				assert.Equal(t, "POST", res.header.Get("Allow"))
			}
		})
	}
	calls, _ := e.messaging.calls()
	assert.Zero(t, calls)

	fits := "Body=" + strings.Repeat("x", 64<<10-5)
	res := e.postForm("/webhooks/sandbox/inbound", formType, lengthless{strings.NewReader(fits)}, nil)
	assert.Equal(t, http.StatusOK, res.status, "a form of exactly 64 KiB passes: %s", res.body)
}

func TestPublicRoutesNeedNoTokenAndSkipTheRateLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *gateway.Config) { c.RateLimit, c.RateBurst = 1, 1 })
	e.messaging.link("abc", "https://example.test/")
	for i := range 3 {
		res := e.postForm("/webhooks/sandbox/inbound", formType, strings.NewReader(url.Values{"i": {fmt.Sprint(i)}}.Encode()),
			http.Header{"Authorization": {"Bearer not-a-token"}})
		require.Equal(t, http.StatusOK, res.status, "webhook %d: %s", i, res.body)
		assert.Equal(t, http.StatusFound, e.follow(http.MethodGet, "/l/abc", nil).StatusCode, "click %d", i)
	}
}
