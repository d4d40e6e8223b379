package gateway_test

import (
	"bytes"
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/gateway/apidocs"
)

// The API reference is open, self-contained and cacheable: the page loads its assets from the
// gateway only, under a self-only Content-Security-Policy; each answer has an ETag and 304s
// to it; only GET and HEAD are allowed.
func TestAPIReferenceIsServed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)

	page := e.do(request{method: http.MethodGet, path: "/docs"})
	require.Equal(t, http.StatusOK, page.status, "no token needed")
	assert.Equal(t, "text/html; charset=utf-8", page.header.Get("Content-Type"))
	assert.Equal(t, "no-cache", page.header.Get("Cache-Control"))
	assert.Equal(t, "nosniff", page.header.Get("X-Content-Type-Options"))
	csp := page.header.Get("Content-Security-Policy")
	assert.Contains(t, csp, "default-src 'none'")
	assert.Contains(t, csp, "script-src 'self';", "no inline or foreign scripts")
	assert.Contains(t, csp, "connect-src 'self';", "fetches only from the gateway")
	assert.Equal(t, apidocs.Page, page.body)
	assert.NotContains(t, string(page.body), "//", "loads nothing from another origin")
	paths := map[string]response{"/docs": page}
	for name, a := range apidocs.Assets {
		assert.Contains(t, string(page.body), `="/docs/`+name+`"`, "the page loads %s", name)
		res := e.do(request{method: http.MethodGet, path: "/docs/" + name})
		require.Equal(t, http.StatusOK, res.status, name)
		assert.Equal(t, a.ContentType, res.header.Get("Content-Type"), name)
		assert.Equal(t, "public, max-age=86400", res.header.Get("Cache-Control"), name)
		assert.Equal(t, strconv.Itoa(len(a.Body)), res.header.Get("Content-Length"), name)
		assert.True(t, bytes.Equal(a.Body, res.body), "%s is the embedded file", name)
		paths["/docs/"+name] = res
	}
	assert.Contains(t, string(apidocs.Assets["docs.js"].Body), `url: "/openapi.json"`)

	for path, r := range paths {
		tag := r.header.Get("ETag")
		require.NotEmpty(t, tag, path)
		for _, inm := range []string{tag, "W/" + tag, `"other", ` + tag, "*"} {
			again := e.do(request{method: http.MethodGet, path: path, header: http.Header{"If-None-Match": {inm}}})
			assert.Equal(t, http.StatusNotModified, again.status, "%s If-None-Match %s", path, inm)
			assert.Empty(t, again.body)
			assert.Equal(t, tag, again.header.Get("ETag"))
		}
		stale := e.do(request{method: http.MethodGet, path: path, header: http.Header{"If-None-Match": {`"other"`}}})
		assert.Equal(t, http.StatusOK, stale.status, path)
		head := e.do(request{method: http.MethodHead, path: path})
		assert.Equal(t, http.StatusOK, head.status, path)
		assert.Empty(t, head.body)
		post := e.do(request{method: http.MethodPost, path: path})
		assert.Equal(t, http.StatusMethodNotAllowed, post.status, path)
		assert.Equal(t, "GET, HEAD", post.header.Get("Allow"), path)
	}
	assert.Equal(t, http.StatusNotFound, e.do(request{method: http.MethodGet, path: "/docs/other.js"}).status)
}
