package links

import (
	"crypto/rand"
	"fmt"
	"strings"
)

// CodeLength is the length of a short-link code: 62^8 ≈ 2.2e14 codes, so guessing a live one
// is hopeless and collisions are rare enough to retry.
const CodeLength = 8

const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// NewCode returns a random short-link code: CodeLength characters of [0-9A-Za-z] from
// crypto/rand.
func NewCode() (string, error) {
	// Bytes of 248 and above are skipped so that each character is equally likely
	// (248 = 4 × 62).
	const limit = 256 - 256%len(alphabet)
	code := make([]byte, 0, CodeLength)
	buf := make([]byte, 2*CodeLength)
	for len(code) < CodeLength {
		if _, err := rand.Read(buf); err != nil {
			return "", fmt.Errorf("read random bytes: %w", err)
		}
		for _, b := range buf {
			if int(b) < limit && len(code) < CodeLength {
				code = append(code, alphabet[int(b)%len(alphabet)])
			}
		}
	}
	return string(code), nil
}

// ValidCode reports whether s could be a code NewCode made, so that the gateway can answer
// 404 for anything else without a lookup.
func ValidCode(s string) bool {
	if len(s) != CodeLength {
		return false
	}
	for i := range len(s) {
		if !strings.ContainsRune(alphabet, rune(s[i])) {
			return false
		}
	}
	return true
}
