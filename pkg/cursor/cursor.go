// Package cursor makes the opaque keyset cursors list endpoints hand out: a JSON payload,
// base64url-encoded and signed with HMAC-SHA256, so a client can pass one back but not forge or
// edit one. A cursor that fails to decode or verify is ErrInvalid, which services answer as a 400.
package cursor

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
)

// ErrInvalid is returned for a cursor that was not made by this Codec or was altered.
var ErrInvalid = errors.New("cursor: invalid or tampered")

// macSize is the number of HMAC bytes kept: 128 bits is ample against forgery of a page token.
const macSize = 16

// maxLen bounds the input before any decoding work is done.
const maxLen = 1024

// Codec signs and verifies cursors with one secret.
type Codec struct{ key []byte }

// New returns a Codec keyed by secret (every replica of a service must share it).
func New(secret string) *Codec { return &Codec{key: []byte(secret)} }

// Encode returns the opaque cursor for v.
func (c *Codec) Encode(v any) (string, error) {
	payload, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("cursor: encode: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(append(payload, c.mac(payload)...)), nil
}

// Decode verifies s and unmarshals its payload into v.
func (c *Codec) Decode(s string, v any) error {
	if s == "" || len(s) > maxLen {
		return ErrInvalid
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(raw) <= macSize {
		return ErrInvalid
	}
	payload, sum := raw[:len(raw)-macSize], raw[len(raw)-macSize:]
	if !hmac.Equal(sum, c.mac(payload)) {
		return ErrInvalid
	}
	if err := json.Unmarshal(payload, v); err != nil {
		return ErrInvalid
	}
	return nil
}

func (c *Codec) mac(payload []byte) []byte {
	h := hmac.New(sha256.New, c.key)
	h.Write(payload)
	return h.Sum(nil)[:macSize]
}
