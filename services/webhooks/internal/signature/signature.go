// Package signature signs webhook requests per Standard Webhooks: the secret is "whsec_" and
// the base64 of the key, and each request carries webhook-id, webhook-timestamp and
// webhook-signature "v1,<base64 HMAC-SHA256 of id.timestamp.body>", which any Standard
// Webhooks library verifies.
package signature

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strconv"
	"time"
)

// The request headers of the scheme.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// secretPrefix marks a Standard Webhooks secret.
const secretPrefix = "whsec_"

// keyBytes is the key size: 24 random bytes, 192 bits, as Svix issues.
const keyBytes = 24

// NewKey returns a random signing key.
func NewKey() []byte {
	key := make([]byte, keyBytes)
	_, _ = rand.Read(key) // crypto/rand.Read never fails (it panics instead)
	return key
}

// Secret is how the key is shown to the endpoint's owner.
func Secret(key []byte) string { return secretPrefix + base64.StdEncoding.EncodeToString(key) }

// Sign is the webhook-signature of body sent as message id at ts.
func Sign(key []byte, id string, ts time.Time, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + strconv.FormatInt(ts.Unix(), 10) + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// SetHeaders sets the three headers of message id, signed at ts, on h.
func SetHeaders(h http.Header, key []byte, id string, ts time.Time, body []byte) {
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(HeaderSignature, Sign(key, id, ts, body))
}
