package twilio

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/subtle"
	"encoding/base64"
	"maps"
	"net/url"
	"slices"
	"strings"
)

// Twilio signs each webhook request (the X-Twilio-Signature header), so a webhook can refuse
// requests that did not come from Twilio. The signature is base64(HMAC-SHA1(auth token, URL +
// name+value of every POST parameter, ordered by name)). Repeated names contribute each
// distinct value in sorted order, as Twilio's helper libraries do.

// Sign returns the signature Twilio sends for a POST to fullURL carrying params. Params are the
// form fields as received; repeated names are allowed.
func Sign(authToken, fullURL string, params url.Values) string {
	mac := hmac.New(sha1.New, []byte(authToken))
	mac.Write([]byte(fullURL))
	for _, name := range slices.Sorted(maps.Keys(params)) {
		for _, value := range slices.Compact(slices.Sorted(slices.Values(params[name]))) {
			mac.Write([]byte(name))
			mac.Write([]byte(value))
		}
	}
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// ValidSignature reports whether signature is the request's signature under authToken, comparing in
// constant time. Twilio does not sign the standard port consistently, so the URL is also tried
// without its port and, when it has none, with the scheme's default port.
func ValidSignature(authToken, fullURL string, params url.Values, signature string) bool {
	if signature == "" {
		return false
	}
	ok := 0
	for _, u := range urlVariants(fullURL) {
		ok |= subtle.ConstantTimeCompare([]byte(Sign(authToken, u, params)), []byte(signature))
	}
	return ok == 1
}

// urlVariants returns fullURL followed by its port variants. The host is edited in place rather
// than through url.URL.String, which would re-encode the path and query and so change what
// is signed.
func urlVariants(fullURL string) []string {
	variants := []string{fullURL}
	u, err := url.Parse(fullURL)
	if err != nil || u.Host == "" {
		return variants
	}
	authStart := strings.Index(fullURL, "//")
	if authStart < 0 {
		return variants
	}
	authStart += 2
	authEnd := len(fullURL)
	if i := strings.IndexAny(fullURL[authStart:], "/?#"); i >= 0 {
		authEnd = authStart + i
	}
	hostStart := authStart + strings.LastIndex(fullURL[authStart:authEnd], "@") + 1
	before, hostport, after := fullURL[:hostStart], fullURL[hostStart:authEnd], fullURL[authEnd:]

	if port := u.Port(); port != "" {
		return append(variants, before+strings.TrimSuffix(hostport, ":"+port)+after)
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		variants = append(variants, before+hostport+":443"+after)
	case "http":
		variants = append(variants, before+hostport+":80"+after)
	}
	return variants
}
