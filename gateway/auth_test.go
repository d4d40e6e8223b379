package gateway_test

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestJWTValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.member("user-1", "read")
	now := time.Now()
	with := func(change func(jwt.MapClaims)) jwt.MapClaims {
		c := claims("user-1")
		change(c)
		return c
	}
	rsaPub, err := x509.MarshalPKIXPublicKey(&rsaKey().PublicKey)
	require.NoError(t, err)
	rsaPubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: rsaPub})

	cases := []struct {
		name   string
		token  func() string
		accept bool
	}{
		{"ES256 from the JWKS", func() string { return sign(t, e.key, claims("user-1")) }, true},
		{"RS256 from the JWKS", func() string { return sign(t, e.rsa, claims("user-1")) }, true},
		{"expired just inside the leeway", func() string {
			return sign(t, e.key, with(func(c jwt.MapClaims) { c["exp"] = now.Add(-leeway / 3).Unix() }))
		}, true},
		{"nbf just inside the leeway", func() string {
			return sign(t, e.key, with(func(c jwt.MapClaims) { c["nbf"] = now.Add(leeway / 3).Unix() }))
		}, true},

		{"alg none", func() string {
			header := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT","kid":"ec-1"}`))
			payload := base64.RawURLEncoding.EncodeToString([]byte(`{"iss":"` + issuer + `","aud":"` + audience + `","sub":"user-1","exp":` + itoa(now.Add(time.Hour).Unix()) + `}`))
			return header + "." + payload + "."
		}, false},
		{"HS256 signed with the RSA public key", func() string {
			tok := jwt.NewWithClaims(jwt.SigningMethodHS256, claims("user-1"))
			tok.Header["kid"] = e.rsa.kid
			s, err := tok.SignedString(rsaPubPEM)
			require.NoError(t, err)
			return s
		}, false},
		{"RS512 is not a pinned algorithm", func() string {
			tok := jwt.NewWithClaims(jwt.SigningMethodRS512, claims("user-1"))
			tok.Header["kid"] = e.rsa.kid
			s, err := tok.SignedString(rsaKey())
			require.NoError(t, err)
			return s
		}, false},
		{"unknown kid", func() string { return sign(t, newECKey(t, "unknown-kid"), claims("user-1")) }, false},
		{"known kid, signed by another key", func() string { return sign(t, newECKey(t, e.key.kid), claims("user-1")) }, false},
		{"ES256 naming the RSA key", func() string {
			other := newECKey(t, e.rsa.kid)
			return sign(t, other, claims("user-1"))
		}, false},
		{"wrong iss", func() string { return sign(t, e.key, with(func(c jwt.MapClaims) { c["iss"] = "https://evil.test" })) }, false},
		{"wrong aud", func() string { return sign(t, e.key, with(func(c jwt.MapClaims) { c["aud"] = "someone-else" })) }, false},
		{"missing aud", func() string { return sign(t, e.key, with(func(c jwt.MapClaims) { delete(c, "aud") })) }, false},
		{"missing exp", func() string { return sign(t, e.key, with(func(c jwt.MapClaims) { delete(c, "exp") })) }, false},
		{"missing sub", func() string { return sign(t, e.key, with(func(c jwt.MapClaims) { delete(c, "sub") })) }, false},
		{"expired beyond the leeway", func() string {
			return sign(t, e.key, with(func(c jwt.MapClaims) { c["exp"] = now.Add(-2 * leeway).Unix() }))
		}, false},
		{"nbf in the future beyond the leeway", func() string {
			return sign(t, e.key, with(func(c jwt.MapClaims) { c["nbf"] = now.Add(2 * leeway).Unix() }))
		}, false},
		// RFC 7519 NumericDate is a JSON number: a string holding one is not a date.
		{"exp as a string", func() string {
			return sign(t, e.key, with(func(c jwt.MapClaims) { c["exp"] = itoa(now.Add(time.Hour).Unix()) }))
		}, false},
		{"nbf as a string", func() string {
			return sign(t, e.key, with(func(c jwt.MapClaims) { c["nbf"] = itoa(now.Unix()) }))
		}, false},
		{"iat as a string", func() string {
			return sign(t, e.key, with(func(c jwt.MapClaims) { c["iat"] = itoa(now.Unix()) }))
		}, false},
		{"exp as a boolean", func() string { return sign(t, e.key, with(func(c jwt.MapClaims) { c["exp"] = true })) }, false},
		{"iat in the future beyond the leeway", func() string {
			return sign(t, e.key, with(func(c jwt.MapClaims) { c["iat"] = now.Add(2 * leeway).Unix() }))
		}, false},
		{"sub as a number", func() string { return sign(t, e.key, with(func(c jwt.MapClaims) { c["sub"] = 42 })) }, false},
		{"tampered payload", func() string {
			parts := strings.Split(sign(t, e.key, claims("user-1")), ".")
			parts[1] = base64.RawURLEncoding.EncodeToString([]byte(`{"iss":"` + issuer + `","aud":"` + audience + `","sub":"admin","exp":` + itoa(now.Add(time.Hour).Unix()) + `}`))
			return strings.Join(parts, ".")
		}, false},
		{"not a JWT", func() string { return "not-a-jwt" }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := e.do(request{method: http.MethodGet, path: "/api/contacts", token: tc.token(), org: org})
			if tc.accept {
				assert.Equal(t, http.StatusOK, res.status, "%s", res.body)
				return
			}
			assert.Equal(t, http.StatusUnauthorized, res.status, "%s", res.body)
			assert.Equal(t, "UNAUTHENTICATED", res.apiErr(t)["code"])
			assert.Equal(t, `Bearer error="invalid_token"`, res.header.Get("WWW-Authenticate"))
		})
	}
	_, calls := e.contacts.lastCall()
	assert.Equal(t, 4, calls, "only the accepted tokens reached the service")
}

func TestMissingTokenGetsTheInvalidTokenChallenge(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.member("user-1", "read")
	for name, header := range map[string]string{"no header": "", "not bearer": "Basic dXNlcjpwYXNz", "empty bearer": "Bearer "} {
		h := http.Header{}
		if header != "" {
			h.Set("Authorization", header)
		}
		res := e.do(request{method: http.MethodGet, path: "/api/contacts", org: org, header: h})
		assert.Equal(t, http.StatusUnauthorized, res.status, name)
		assert.Equal(t, "UNAUTHENTICATED", res.apiErr(t)["code"], name)
		assert.Equal(t, `Bearer error="invalid_token"`, res.header.Get("WWW-Authenticate"), name)
	}
	// Unknown /api routes are behind authentication too: their existence is not disclosed.
	res := e.do(request{method: http.MethodGet, path: "/api/nothing-here"})
	assert.Equal(t, http.StatusUnauthorized, res.status)
}

func TestJWKSRotationNeedsNoRestart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.member("user-1", "read")
	oldTok := e.token("user-1")
	require.Equal(t, http.StatusOK, e.do(request{method: http.MethodGet, path: "/api/contacts", token: oldTok, org: org}).status)

	rotated := newECKey(t, "ec-2")
	e.idp.publish(t, rotated)
	res := e.do(request{method: http.MethodGet, path: "/api/contacts", token: sign(t, rotated, claims("user-1")), org: org})
	assert.Equal(t, http.StatusOK, res.status, "a token from the new key is accepted at once: %s", res.body)

	res = e.do(request{method: http.MethodGet, path: "/api/contacts", token: oldTok, org: org})
	assert.Equal(t, http.StatusUnauthorized, res.status, "the retired key is gone after the refresh")
}

func TestTokensNeverReachServicesOrLogs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.member("user-1", "read")
	tok := e.token("user-1")
	require.Equal(t, http.StatusOK, e.do(request{method: http.MethodGet, path: "/api/contacts", token: tok, org: org}).status)
	bad := tok[:len(tok)-4] + "AAAA"
	require.Equal(t, http.StatusUnauthorized, e.do(request{method: http.MethodGet, path: "/api/contacts", token: bad, org: org}).status)

	md, _ := e.contacts.lastCall()
	assert.Empty(t, md.Get("authorization"), "the bearer token is not forwarded")
	for k, vs := range md {
		for _, v := range vs {
			assert.NotContains(t, v, tok[:20], "metadata %s", k)
		}
	}
	logs := e.logs.String()
	assert.Contains(t, logs, `"status":401`, "the rejection was logged")
	assert.NotContains(t, logs, tok[:20])
	assert.NotContains(t, logs, bad[:20])
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
