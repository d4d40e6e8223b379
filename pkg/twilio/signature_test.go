package twilio

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	token   = "12345"
	hookURL = "https://mycompany.com/myapp.php?foo=1&bar=2"
)

// docsParams and docsSignature are the worked example of Twilio's webhook security
// documentation ("Validating requests"), which Twilio's helper libraries also test against.
var docsParams = url.Values{
	"CallSid": {"CA1234567890ABCDE"},
	"Caller":  {"+14158675310"},
	"Digits":  {"1234"},
	"From":    {"+14158675310"},
	"To":      {"+18005551212"},
}

const docsSignature = "GvWf1cFY/Q7PnoempGyD5oXAezc="

// libParams are the parameters of twilio-go's client/request_validator_test.go and twilio-node's
// spec/validation.spec.js; the signatures below are the ones those files expect.
var libParams = url.Values{
	"CallSid": {"CA1234567890ABCDE"},
	"Caller":  {"+14158675309"},
	"Digits":  {"1234"},
	"From":    {"+14158675309"},
	"To":      {"+18005551212"},
}

func TestSignMatchesTwilioDocs(t *testing.T) {
	t.Parallel()
	assert.Equal(t, docsSignature, Sign(token, hookURL, docsParams))
	assert.True(t, ValidSignature(token, hookURL, docsParams, docsSignature))
}

func TestValidAcceptsHelperLibraryVectors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, url, signature string
		params               url.Values
	}{
		{"plain", hookURL, "RSOYDt4T1cUTdK1PDd93/VVr8B8=", libParams},
		{"https signed with :443", hookURL, "kvajT1Ptam85bY51eRf/AJRuM3w=", libParams},
		{"https non-standard port signed without it",
			"https://mycompany.com:1234/myapp.php?foo=1&bar=2", "RSOYDt4T1cUTdK1PDd93/VVr8B8=", libParams},
		{"http signed with :80", "http://mycompany.com/myapp.php?foo=1&bar=2",
			"0ZXoZLH/DfblKGATFgpif+LLRf4=", libParams},
		{"http signed with its own port", "http://mycompany.com:1234/myapp.php?foo=1&bar=2",
			"Zmvh+3yNM1Phv2jhDCwEM3q5ebU=", libParams},
		{"credentials in URL", "https://user:pass@mycompany.com/myapp.php?foo=1&bar=2",
			"CukzLTc1tT5dXEDIHm/tKBanW10=", libParams},
		{"credentials in URL signed with :443", "https://user:pass@mycompany.com/myapp.php?foo=1&bar=2",
			"ZQFR1PTIZXF2MXB8ZnKCvnnA+rI=", libParams},
		{"only a user in URL", "https://user@mycompany.com/myapp.php?foo=1&bar=2",
			"2YRLlVAflCqxaNicjMpJcSTgzSs=", libParams},
		{"special characters in query", hookURL + "&Body=It's+amazing",
			"dsq4Ehbj6cs+KdTkpF5sSSplOWw=", libParams},
		{"repeated name", hookURL, "83O6e2vORAoJHUNzJjDWN1jz+BA=",
			url.Values{"MessagingBinding.Address": {"+1325xxxxxxx", "+1415xxxxxxx"}}},
		{"repeated name in other order", hookURL, "83O6e2vORAoJHUNzJjDWN1jz+BA=",
			url.Values{"MessagingBinding.Address": {"+1415xxxxxxx", "+1325xxxxxxx"}}},
		{"repeated name with a duplicate value", hookURL, "IK+Dwps556ElfBT0I3Rgjkr1wJU=",
			url.Values{"Sid": {"CA123"}, "SidAccount": {"AC123"}, "Digits": {"5678", "1234", "1234"}}},
		// twilio-go: names are ordered by name alone, so Reason precedes ReasonConferenceEnded.
		{"name that prefixes another", hookURL, "vOEb5UThFn24KEfnOFLQY2AE5FY=",
			withParams(libParams, "ReasonConferenceEnded", "test", "Reason", "Participant")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.True(t, ValidSignature(token, tt.url, tt.params, tt.signature))
		})
	}
}

func TestValidRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, token, url, signature string
		params                      url.Values
	}{
		{"missing header", token, hookURL, "", docsParams},
		{"garbage header", token, hookURL, "WRONG SIGNATURE", docsParams},
		{"parameter changed", token, hookURL, docsSignature, withParams(docsParams, "Digits", "9999")},
		{"parameter added", token, hookURL, docsSignature, withParams(docsParams, "Body", "hi")},
		{"parameter removed", token, hookURL, docsSignature, without(docsParams, "Digits")},
		{"repeated value added", token, hookURL, docsSignature, added(docsParams, "Digits", "5678")},
		{"different path", token, "https://mycompany.com/other.php?foo=1&bar=2", docsSignature, docsParams},
		{"different query", token, "https://mycompany.com/myapp.php?foo=1&bar=3", docsSignature, docsParams},
		{"query dropped", token, "https://mycompany.com/myapp.php", docsSignature, docsParams},
		{"http instead of https", token, "http://mycompany.com/myapp.php?foo=1&bar=2", docsSignature, docsParams},
		{"different host", token, "https://evil.com/myapp.php?foo=1&bar=2", docsSignature, docsParams},
		{"wrong token", "54321", hookURL, docsSignature, docsParams},
		{"empty token", "", hookURL, docsSignature, docsParams},
		// twilio-go: this is the signature of the names ordered as name+value strings.
		{"names ordered by name+value", token, hookURL, "95+Bu0JVPi0r/SsESZCVf0dWAjw=",
			withParams(libParams, "ReasonConferenceEnded", "test", "Reason", "Participant")},
		{"https :443 signature on other port", token, "https://mycompany.com:8443/myapp.php?foo=1&bar=2",
			"kvajT1Ptam85bY51eRf/AJRuM3w=", libParams},
		{"http :80 signature on https", token, hookURL, "0ZXoZLH/DfblKGATFgpif+LLRf4=", libParams},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.False(t, ValidSignature(tt.token, tt.url, tt.params, tt.signature))
		})
	}
}

func TestSignDoesNotReorderCallersValues(t *testing.T) {
	t.Parallel()
	params := url.Values{"MediaUrl": {"b", "a"}}
	Sign(token, hookURL, params)
	assert.Equal(t, []string{"b", "a"}, params["MediaUrl"])
}

func TestURLVariants(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
	}{
		{"https://h.example/p?q=1", []string{"https://h.example/p?q=1", "https://h.example:443/p?q=1"}},
		{"http://h.example", []string{"http://h.example", "http://h.example:80"}},
		{"https://h.example:443/p", []string{"https://h.example:443/p", "https://h.example/p"}},
		{"https://u:p@h.example:8443/p#f", []string{"https://u:p@h.example:8443/p#f", "https://u:p@h.example/p#f"}},
		{"https://[::1]:8443/p", []string{"https://[::1]:8443/p", "https://[::1]/p"}},
		// The path is kept byte for byte, not re-encoded.
		{"https://h.example/a%2fb?x='y'", []string{"https://h.example/a%2fb?x='y'", "https://h.example:443/a%2fb?x='y'"}},
		{"/relative", []string{"/relative"}},
		{"::not a url", []string{"::not a url"}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			require.Equal(t, tt.want, urlVariants(tt.in))
		})
	}
}

func FuzzSignValid(f *testing.F) {
	f.Add(token, hookURL, "Digits", "1234", "Digits", "5678")
	f.Add("tok", "http://h:80/p?a=b", "From", "+15551234567", "Body", "STOP")
	f.Add("", "", "", "", "", "")
	f.Fuzz(func(t *testing.T, tok, u, k1, v1, k2, v2 string) {
		params := url.Values{}
		params.Add(k1, v1)
		params.Add(k2, v2)
		sig := Sign(tok, u, params)
		if !ValidSignature(tok, u, params, sig) {
			t.Fatalf("own signature %q does not validate", sig)
		}
		for i := range len(sig) {
			b := []byte(sig)
			b[i] ^= 0x01
			if ValidSignature(tok, u, params, string(b)) {
				t.Fatalf("signature with byte %d flipped validates", i)
			}
		}
		if ValidSignature(tok, u, params, sig[:len(sig)-1]) || ValidSignature(tok, u, params, sig+"=") {
			t.Fatal("truncated or extended signature validates")
		}
	})
}

// withParams returns a copy of v with each name set to the value following it.
func withParams(v url.Values, kv ...string) url.Values {
	c := clone(v)
	for i := 0; i < len(kv); i += 2 {
		c.Set(kv[i], kv[i+1])
	}
	return c
}

func added(v url.Values, name, value string) url.Values {
	c := clone(v)
	c.Add(name, value)
	return c
}

func without(v url.Values, name string) url.Values {
	c := clone(v)
	c.Del(name)
	return c
}

func clone(v url.Values) url.Values {
	c := url.Values{}
	for k, vs := range v {
		c[k] = append([]string(nil), vs...)
	}
	return c
}
