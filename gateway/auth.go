package gateway

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/time/rate"

	"github.com/chorus-sms/chorus/pkg/apierr"
)

// wwwAuthInvalidToken is the WWW-Authenticate challenge of every 401: a missing token as well
// as one that fails validation (bad signature, expired, wrong issuer or audience, unknown
// key), as the API contract asks; RFC 6750 would allow a bare "Bearer" for a missing one.
const wwwAuthInvalidToken = `Bearer error="invalid_token"`

// Key-set fetching. An unknown kid refreshes the set at most once per unknownKIDRefreshEvery
// (a rotated key is picked up at once, a flood of forged kids cannot hammer the identity
// provider); a request waits at most jwksWait for that refresh.
const (
	jwksHTTPTimeout        = 10 * time.Second
	unknownKIDRefreshEvery = 30 * time.Second
	jwksWait               = 5 * time.Second
	maxSubjectLen          = 255 // the orgs service's limit on user subjects
)

// signingMethods are the only algorithms accepted: pinning them stops "alg: none" and
// HS256-signed-with-the-public-key forgeries before any key is looked up.
var signingMethods = []string{jwt.SigningMethodRS256.Alg(), jwt.SigningMethodES256.Alg()}

var errBadSubject = errors.New("token subject missing, too long or not printable ASCII")

// authenticator validates bearer JWTs against the identity provider's JWKS.
type authenticator struct {
	keys     keyfunc.Keyfunc
	parser   *jwt.Parser
	log      *slog.Logger
	verified tokenCache
}

// newAuthenticator fetches the key set once (failing when it cannot, so a wrong URL stops the
// process at start) and keeps refreshing it in the background until ctx ends.
func newAuthenticator(ctx context.Context, cfg Config, log *slog.Logger) (*authenticator, error) {
	failFirstFetch := false
	keys, err := keyfunc.NewDefaultOverrideCtx(ctx, []string{cfg.JWKSURL}, keyfunc.Override{
		HTTPTimeout:               jwksHTTPTimeout,
		NoErrorReturnFirstHTTPReq: &failFirstFetch,
		RefreshInterval:           cfg.JWKSRefresh,
		RefreshUnknownKID:         rate.NewLimiter(rate.Every(unknownKIDRefreshEvery), 1),
		RateLimitWaitMax:          jwksWait,
		RefreshErrorHandlerFunc: func(u string) func(context.Context, error) {
			return func(ctx context.Context, err error) {
				log.WarnContext(ctx, "JWKS refresh failed; keeping the keys already fetched", "url", u, "err", err)
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("gateway: fetch JWKS from %s: %w", cfg.JWKSURL, err)
	}
	return &authenticator{
		keys: keys,
		parser: jwt.NewParser(
			jwt.WithValidMethods(signingMethods),
			jwt.WithExpirationRequired(),
			jwt.WithIssuedAt(),
			jwt.WithIssuer(cfg.Issuer),
			jwt.WithAudience(cfg.Audience),
			jwt.WithLeeway(cfg.JWTLeeway),
		),
		log: log,
	}, nil
}

// verify validates raw and returns its subject, the user id memberships are keyed by.
//
// The claims are read as jwt.MapClaims, not jwt.RegisteredClaims: RegisteredClaims decodes a
// NumericDate from a JSON string too ("exp": "1700000000"), while MapClaims refuses any exp,
// nbf or iat that is not a JSON number (RFC 7519 section 2), and any sub, iss or aud that is
// not a string. WithIssuedAt makes the validator read iat, so its type is checked as well.
//
// A verified token is remembered (tokenCache) until its exp, so a client's next requests skip
// the signature check; each reuse still looks its key up in the current key set.
func (a *authenticator) verify(ctx context.Context, raw string) (string, error) {
	keyfunc := a.keys.KeyfuncCtx(ctx)
	if sub, ok := a.verified.get(raw, time.Now(), keyfunc); ok {
		return sub, nil
	}
	claims := jwt.MapClaims{}
	var key any
	tok, err := a.parser.ParseWithClaims(raw, claims, func(t *jwt.Token) (any, error) {
		k, err := keyfunc(t)
		key = k
		return k, err
	})
	if err != nil {
		return "", err
	}
	sub, err := claims.GetSubject()
	if err != nil || !validSubject(sub) {
		return "", errBadSubject
	}
	if exp, err := claims.GetExpirationTime(); err == nil && exp != nil {
		a.verified.put(raw, verifiedToken{sub: sub, exp: exp.Time, header: tok.Header, key: key})
	}
	return sub, nil
}

// validSubject keeps subjects the services can receive: gRPC metadata values must be
// printable ASCII, and the orgs service refuses longer ones.
func validSubject(s string) bool {
	if s == "" || len(s) > maxSubjectLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// bearerToken returns the token of an "Authorization: Bearer <token>" header.
func bearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// middleware answers 401 unless the request carries a valid token. The Authorization header
// is removed before the request goes on, so the token never reaches a service's metadata (or
// its logs); the reason a token failed is logged at debug level, the token never is.
func (a *authenticator) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, ok := bearerToken(r.Header.Get("Authorization"))
		if !ok {
			w.Header().Set("WWW-Authenticate", wwwAuthInvalidToken)
			writeError(w, r, apiError{Status: http.StatusUnauthorized, Code: apierr.ReasonUnauthenticated, Message: "a bearer token is required"})
			return
		}
		user, err := a.verify(r.Context(), raw)
		if err != nil {
			a.log.DebugContext(r.Context(), "token rejected", "request_id", infoFrom(r.Context()).id, "reason", err)
			msg := "the token is invalid"
			if errors.Is(err, jwt.ErrTokenExpired) {
				msg = "the token has expired"
			}
			w.Header().Set("WWW-Authenticate", wwwAuthInvalidToken)
			writeError(w, r, apiError{Status: http.StatusUnauthorized, Code: apierr.ReasonUnauthenticated, Message: msg})
			return
		}
		infoFrom(r.Context()).user = user
		r = r.Clone(r.Context())
		r.Header.Del("Authorization")
		next.ServeHTTP(w, r)
	})
}

// maxVerifiedTokens bounds the verified-token cache; when full it starts over.
const maxVerifiedTokens = 100_000

// tokenCache remembers tokens whose signature and claims were verified. An entry is served
// only before the token's exp (never within the leeway: a token that old is verified again),
// and only while the key set still gives the same key for the token's kid, so a key removed
// from the JWKS (or replaced under the same kid) ends its tokens at the next refresh.
//
// Entries are keyed by the token's SHA-256, not the token: a full cache holds 32 bytes a token
// instead of the kilobyte or more a JWT can be.
type tokenCache struct {
	mu      sync.Mutex
	entries map[[sha256.Size]byte]verifiedToken
}

type verifiedToken struct {
	sub    string
	exp    time.Time
	header map[string]any // kid and alg, for the key lookup
	key    any
}

// get returns the subject of raw when it was verified before and still holds at now.
func (c *tokenCache) get(raw string, now time.Time, keyfunc jwt.Keyfunc) (string, bool) {
	k := sha256.Sum256([]byte(raw))
	c.mu.Lock()
	e, ok := c.entries[k]
	c.mu.Unlock()
	if !ok {
		return "", false
	}
	if !now.Before(e.exp) {
		c.mu.Lock()
		delete(c.entries, k)
		c.mu.Unlock()
		return "", false
	}
	key, err := keyfunc(&jwt.Token{Raw: raw, Header: e.header})
	if err != nil || !sameKey(key, e.key) {
		c.mu.Lock()
		delete(c.entries, k)
		c.mu.Unlock()
		return "", false
	}
	return e.sub, true
}

func (c *tokenCache) put(raw string, e verifiedToken) {
	k := sha256.Sum256([]byte(raw))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil || len(c.entries) >= maxVerifiedTokens {
		c.entries = map[[sha256.Size]byte]verifiedToken{}
	}
	c.entries[k] = e
}

// sameKey reports whether two public keys are the same key (crypto public keys have Equal).
// The key set hands out the key it holds, so a cached token's key is most often the very same
// pointer, which needs no comparison (Equal copies the keys' big numbers out to compare them).
func sameKey(a, b any) bool {
	switch ka := a.(type) {
	case *ecdsa.PublicKey:
		if kb, ok := b.(*ecdsa.PublicKey); ok && ka == kb && ka != nil {
			return true
		}
	case *rsa.PublicKey:
		if kb, ok := b.(*rsa.PublicKey); ok && ka == kb && ka != nil {
			return true
		}
	}
	k, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && k.Equal(b)
}
