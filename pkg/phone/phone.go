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
	if n, ok := nanpE164(s); ok {
		// Already E.164, as stored contacts' phones reach a bulk send: only the validity check
		// is left, without Parse's regular expressions (half of the cost).
		if !phonenumbers.IsValidNumber(n) {
			return "", ErrInvalid
		}
		return s, nil
	}
	return parse(s)
}

// IsE164 reports whether s is written in E.164 as contacts stores phones: "+", a first digit
// other than 0, and 7 to 15 digits in all (the contacts table's check). It checks the form
// only, not whether the number exists (Normalize).
func IsE164(s string) bool {
	if len(s) < 8 || len(s) > 16 || s[0] != '+' || s[1] == '0' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// nanpE164 reads s when it is "+1" and ten digits, the first 2-9, as the number
// phonenumbers.Parse returns for it: country code 1 and the ten digits (no national prefix to
// strip, no extension, no leading zero).
func nanpE164(s string) (*phonenumbers.PhoneNumber, bool) {
	if len(s) != 12 || s[0] != '+' || s[1] != '1' || s[2] < '2' || s[2] > '9' {
		return nil, false
	}
	var national uint64
	for i := 2; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return nil, false
		}
		national = national*10 + uint64(s[i]-'0')
	}
	country := int32(1)
	return &phonenumbers.PhoneNumber{CountryCode: &country, NationalNumber: &national}, true
}

// parse normalizes any written form of a number.
func parse(s string) (string, error) {
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
