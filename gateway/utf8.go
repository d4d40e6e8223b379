package gateway

import (
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/chorus-sms/chorus/pkg/apierr"
)

// readableURL answers requests whose path or query cannot become proto strings before they
// reach the mux, which would copy the bytes into a request that gRPC then refuses to send (a
// 500). A path that is not valid UTF-8, or holds a NUL, names nothing: 404, as any id that
// cannot exist. A query value that is not valid UTF-8 is a bad parameter: 400 naming it. It
// returns false when it has answered.
func readableURL(w http.ResponseWriter, r *http.Request) bool {
	if !utf8.ValidString(r.URL.Path) || strings.ContainsRune(r.URL.Path, 0) {
		writeError(w, r, apiError{Status: http.StatusNotFound, Code: apierr.ReasonNotFound, Message: "not found"})
		return false
	}
	if plainQuery(r.URL.RawQuery) {
		return true
	}
	for k, vs := range r.URL.Query() {
		valid := utf8.ValidString(k)
		for _, v := range vs {
			valid = valid && utf8.ValidString(v)
		}
		if !valid {
			name := k
			if !utf8.ValidString(k) {
				name = "query"
			}
			writeError(w, r, apiError{
				Status: http.StatusBadRequest, Code: apierr.ReasonValidation,
				Message: "invalid " + name + ": not valid UTF-8", Fields: map[string]string{name: "must be valid UTF-8"},
			})
			return false
		}
	}
	return true
}

// plainQuery reports whether a raw query is ASCII without escapes, so that every name and
// value it decodes to is ASCII too (a '+' decodes to a space): nothing to check, and nothing
// to parse into a map the mux parses again.
func plainQuery(q string) bool {
	for i := 0; i < len(q); i++ {
		if q[i] >= utf8.RuneSelf || q[i] == '%' {
			return false
		}
	}
	return true
}
