// Package devauth is the local identity provider of `make run` and the e2e tests: one ES256
// key kept in a PEM file, published as a JWKS, and used by `chorusctl token` to sign access
// tokens the local gateway accepts. Production points the gateway at a real IdP's JWKS.
package devauth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Issuer and Audience of dev tokens; the local stack configures the gateway with them.
const (
	Issuer   = "chorus-dev"
	Audience = "chorus-api"
)

// Key is the dev signing key.
type Key struct {
	priv *ecdsa.PrivateKey
	kid  string
}

// LoadOrCreate reads the PEM key at path, creating it (mode 0600) when it does not exist.
func LoadOrCreate(path string) (*Key, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		priv, gerr := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if gerr != nil {
			return nil, fmt.Errorf("devauth: generate key: %w", gerr)
		}
		der, merr := x509.MarshalECPrivateKey(priv)
		if merr != nil {
			return nil, fmt.Errorf("devauth: marshal key: %w", merr)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("devauth: %w", err)
		}
		b = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
		// O_EXCL: two processes racing to create the key must end up with the same one.
		f, oerr := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if oerr == nil {
			_, werr := f.Write(b)
			if cerr := f.Close(); werr == nil {
				werr = cerr
			}
			if werr != nil {
				return nil, fmt.Errorf("devauth: write %s: %w", path, werr)
			}
			return newKey(priv), nil
		}
		if !errors.Is(oerr, fs.ErrExist) {
			return nil, fmt.Errorf("devauth: create %s: %w", path, oerr)
		}
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("devauth: read %s: %w", path, err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, fmt.Errorf("devauth: %s is not a PEM file", path)
	}
	priv, err := x509.ParseECPrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("devauth: parse %s: %w", path, err)
	}
	return newKey(priv), nil
}

func newKey(priv *ecdsa.PrivateKey) *Key {
	pub, _ := priv.PublicKey.ECDH()
	sum := sha256.Sum256(pub.Bytes())
	return &Key{priv: priv, kid: hex.EncodeToString(sum[:8])}
}

// Sign returns an access token for user valid for ttl.
func (k *Key) Sign(user string, ttl time.Duration) (string, error) {
	now := time.Now()
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.RegisteredClaims{
		Issuer:    Issuer,
		Subject:   user,
		Audience:  jwt.ClaimStrings{Audience},
		IssuedAt:  jwt.NewNumericDate(now),
		NotBefore: jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
	})
	tok.Header["kid"] = k.kid
	s, err := tok.SignedString(k.priv)
	if err != nil {
		return "", fmt.Errorf("devauth: sign: %w", err)
	}
	return s, nil
}

// JWKS returns the public key as a JSON Web Key Set document.
func (k *Key) JWKS() []byte {
	pub, _ := k.priv.PublicKey.ECDH()
	raw := pub.Bytes() // 0x04 || X || Y, 32 bytes each for P-256
	enc := base64.RawURLEncoding.EncodeToString
	doc, _ := json.Marshal(map[string]any{"keys": []map[string]string{{
		"kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": k.kid,
		"x": enc(raw[1:33]), "y": enc(raw[33:65]),
	}}})
	return doc
}

// Handler serves the JWKS document.
func (k *Key) Handler() http.Handler {
	doc := k.JWKS()
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(doc)
	})
}
