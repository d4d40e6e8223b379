package gateway

import (
	"net/http"
	"net/url"
	"strings"
)

// shortLink serves GET and HEAD /l/{code}: the messaging service records the click and names
// the target, which the answer redirects to. The redirect is never cached, so every click
// reaches the gateway and is counted.
func (p *publicRoutes) shortLink(code string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isRead(r.Method) {
			allowOnly(w, r, "GET, HEAD")
			return
		}
		// Header bytes need not be UTF-8; proto strings must.
		link, err := p.messaging.FollowShortLink(withRequestID(r.Context()), code, strings.ToValidUTF8(r.UserAgent(), "\uFFFD"))
		if err != nil {
			p.fail(w, r, err)
			return
		}
		// The service only stores http(s) links; anything else would make the gateway an open
		// redirect to, say, a javascript: URL.
		target, err := url.Parse(link)
		if err != nil || (target.Scheme != "http" && target.Scheme != "https") || target.Host == "" {
			p.log.ErrorContext(r.Context(), "short link points to an unusable URL", "request_id", infoFrom(r.Context()).id, "code", code)
			writeError(w, r, internalError)
			return
		}
		h := w.Header()
		h.Set("Location", target.String())
		h.Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusFound)
	})
}
