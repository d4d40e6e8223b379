package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"

	"github.com/chorus-sms/chorus/gateway/apidocs"
)

// Paths of the API reference: the page and the renderer it loads.
const (
	docsPath       = "/docs"
	docsBundlePath = "/docs/" + apidocs.BundleName
)

// docsPolicy is the page's Content-Security-Policy: everything from the gateway itself and
// nothing else. Redoc needs more than self in three places only: styled-components injects
// <style> elements (style-src 'unsafe-inline'), its search index runs in a worker made from a
// blob: URL, and a few of its icons are data: images.
const docsPolicy = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// The page and the bundle change only with the gateway's build: each answers with a strong
// ETag of its bytes, so a browser revalidates with If-None-Match and gets 304 until an upgrade.
var (
	docsPageTag   = contentTag(apidocs.Page)
	docsBundleTag = contentTag(apidocs.Bundle)
)

func contentTag(b []byte) string {
	sum := sha256.Sum256(b)
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}

// serveDocs serves the API reference page, revalidated on every load (no-cache) so it always
// names the bundle this gateway serves.
func serveDocs(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("Content-Security-Policy", docsPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	serveStatic(w, r, apidocs.Page, docsPageTag)
}

// serveDocsBundle serves the vendored Redoc bundle, cached for a day and then revalidated.
func serveDocsBundle(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/javascript; charset=utf-8")
	h.Set("Cache-Control", "public, max-age=86400")
	h.Set("X-Content-Type-Options", "nosniff")
	serveStatic(w, r, apidocs.Bundle, docsBundleTag)
}

// serveStatic answers body with its ETag, or 304 when If-None-Match names it. Nothing else is
// conditional and there are no ranges: the answers are 200 and 304 only, as documented.
func serveStatic(w http.ResponseWriter, r *http.Request, body []byte, tag string) {
	w.Header().Set("ETag", tag)
	if etagListed(r.Header.Get("If-None-Match"), tag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// etagListed reports whether an If-None-Match value names tag (weakly compared, as RFC 9110
// says for If-None-Match) or is "*".
func etagListed(header, tag string) bool {
	for t := range strings.SplitSeq(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == tag {
			return true
		}
	}
	return false
}
