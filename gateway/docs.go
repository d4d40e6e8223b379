package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"

	"github.com/chorus-sms/chorus/gateway/apidocs"
)

// docsPath is the API reference page; its assets are at /docs/<name> (apidocs.Assets).
const docsPath = "/docs"

// docsPolicy is the page's Content-Security-Policy: everything from the gateway itself and
// nothing else, but for Swagger UI's inline style attributes and the data: images (icons) its
// stylesheet holds.
const docsPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; " +
	"img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// docsRoutes are the handlers of the page and its assets, by path. The page is revalidated on
// every load (no-cache), so it always names what this gateway serves; the assets are cached
// for a day. Each answers with a strong ETag of its bytes and 304 to If-None-Match naming it.
func docsRoutes() map[string]http.HandlerFunc {
	pageTag := contentTag(apidocs.Page)
	routes := map[string]http.HandlerFunc{
		docsPath: func(w http.ResponseWriter, r *http.Request) {
			h := w.Header()
			h.Set("Content-Type", "text/html; charset=utf-8")
			h.Set("Cache-Control", "no-cache")
			h.Set("Content-Security-Policy", docsPolicy)
			h.Set("X-Content-Type-Options", "nosniff")
			h.Set("Referrer-Policy", "no-referrer")
			serveStatic(w, r, apidocs.Page, pageTag)
		},
	}
	for name, a := range apidocs.Assets {
		tag := contentTag(a.Body)
		routes[docsPath+"/"+name] = func(w http.ResponseWriter, r *http.Request) {
			h := w.Header()
			h.Set("Content-Type", a.ContentType)
			h.Set("Cache-Control", "public, max-age=86400")
			h.Set("X-Content-Type-Options", "nosniff")
			serveStatic(w, r, a.Body, tag)
		}
	}
	return routes
}

func contentTag(b []byte) string {
	sum := sha256.Sum256(b)
	return `"` + hex.EncodeToString(sum[:16]) + `"`
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
