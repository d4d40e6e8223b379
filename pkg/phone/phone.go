// Package phone normalizes phone numbers typed in any common format to E.164. Numbers without
// a country code are read as US numbers, as the API promises.
package phone

import (
	"errors"
	"strings"

	"github.com/nyaruka/phonenumbers"
)

// DefaultRegion is the region assumed for numbers written without a country code.
const DefaultRegion = "US"

// ErrInvalid is returned for input that is not a valid phone number.
var ErrInvalid = errors.New("not a valid phone number")

// Normalize returns s in E.164 (e.g. "+15551234567") or ErrInvalid.
func Normalize(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > 64 {
		return "", ErrInvalid
	}
	num, err := phonenumbers.Parse(s, DefaultRegion)
	if err != nil {
		return "", ErrInvalid
	}
	// An extension cannot receive a text, and dropping it would merge different people who
	// share a switchboard number.
	if !phonenumbers.IsValidNumber(num) || num.GetExtension() != "" {
		return "", ErrInvalid
	}
	return phonenumbers.Format(num, phonenumbers.E164), nil
}

// Digits returns only the ASCII digits of s; search uses it to match a number typed in any
// format against stored E.164 values.
func Digits(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}
