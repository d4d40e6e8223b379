package gateway_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chorus-sms/chorus/gateway"
	"github.com/chorus-sms/chorus/pkg/registry"
)

// follow requests path without following redirects; the body is read and closed.
func (e *env) follow(method, path string, header http.Header) *http.Response {
	e.t.Helper()
	req, err := http.NewRequest(method, e.url+path, nil)
	require.NoError(e.t, err)
	for k, vs := range header {
		req.Header[k] = vs
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.Do(req)
	require.NoError(e.t, err)
	_, _ = io.Copy(io.Discard, res.Body)
	require.NoError(e.t, res.Body.Close())
	return res
}

func TestShortLinksRedirectEveryClick(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.messaging.link("Ab3xY9", "https://shop.example.test/sale?utm_source=sms")
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		t.Run(method, func(t *testing.T) {
			res := e.follow(method, "/l/Ab3xY9", http.Header{"User-Agent": {"Mozilla/5.0 (iPhone)"}, "X-Request-Id": {"req-click"}})
			require.Equal(t, http.StatusFound, res.StatusCode)
			assert.Equal(t, "https://shop.example.test/sale?utm_source=sms", res.Header.Get("Location"))
			assert.Equal(t, "no-store", res.Header.Get("Cache-Control"), "no cache may answer the next click")
			click := e.messaging.lastClick()
			require.NotNil(t, click)
			assert.Equal(t, "Ab3xY9", click.GetCode())
			assert.Equal(t, "Mozilla/5.0 (iPhone)", click.GetUserAgent())
			_, md := e.messaging.calls()
			assert.Equal(t, []string{"req-click"}, md.Get("x-request-id"))
		})
	}
	metrics := string(e.do(request{method: http.MethodGet, path: "/metrics"}).body)
	assert.Contains(t, metrics, `chorus_gateway_http_requests_total{method="GET",route="/l/{code}",status="302"} 1`)
	assert.NotContains(t, metrics, "Ab3xY9", "codes stay out of the metrics")
}

func TestShortLinkFailures(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.messaging.link("bad", "javascript:alert(1)")
	e.messaging.fail("down", status.Error(codes.Unavailable, "dial tcp 10.0.0.1:9103: refused"))

	res := e.do(request{method: http.MethodGet, path: "/l/nope"})
	require.Equal(t, http.StatusNotFound, res.status)
	assert.Equal(t, "NOT_FOUND", res.apiErr(t)["code"])
	assert.Equal(t, "no-store", res.header.Get("Cache-Control"))

	res = e.do(request{method: http.MethodGet, path: "/l/bad"})
	assert.Equal(t, http.StatusInternalServerError, res.status, "never a redirect to a non-web URL")
	assert.Empty(t, res.header.Get("Location"))

	res = e.do(request{method: http.MethodGet, path: "/l/down"})
	assert.Equal(t, http.StatusServiceUnavailable, res.status)
	assert.Equal(t, "UNAVAILABLE", res.apiErr(t)["code"])

	res = e.do(request{method: http.MethodPost, path: "/l/nope"})
	assert.Equal(t, http.StatusMethodNotAllowed, res.status)
	assert.Equal(t, "GET, HEAD", res.header.Get("Allow"))

	for _, path := range []string{"/l/", "/l/a/b"} {
		res = e.do(request{method: http.MethodGet, path: path})
		assert.Equal(t, http.StatusNotFound, res.status, path)
		assert.Equal(t, "no such route", res.apiErr(t)["message"], path)
	}
	calls, _ := e.messaging.calls()
	assert.Equal(t, 3, calls, "the POST and the paths that are no link never reach the service")
}

func TestWithoutMessagingThePublicRoutesDoNotExist(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *gateway.Config) { delete(c.Peers, registry.Messaging.Name) })
	for _, r := range []request{
		{method: http.MethodGet, path: "/l/abc"},
		{method: http.MethodPost, path: "/webhooks/sandbox/inbound", header: http.Header{"Content-Type": {formType}}},
	} {
		res := e.do(r)
		assert.Equal(t, http.StatusNotFound, res.status, r.path)
	}
	res := e.do(request{method: http.MethodGet, path: "/readyz"})
	assert.Equal(t, map[string]any{"orgs": "SERVING", "contacts": "SERVING"}, res.json(t)["services"])
}
