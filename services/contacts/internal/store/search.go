package store

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/chorus-sms/chorus/pkg/phone"
)

// Search limits, checked by the server before a search reaches SQL.
const (
	MaxSearchLen   = 200 // characters
	MaxSearchTerms = 8
)

// fuzzyMinRunes is the length from which a term also matches by trigram word similarity; a
// shorter term has too few trigrams for similarity to mean anything.
const fuzzyMinRunes = 3

// exactChars mark a term that matches as typed: with digits or an "@" it is (part of) a number
// or an email address, where a near miss is another person, and where similarity would match
// thousands of look-alike addresses at the cost of a similarity check on each.
const exactChars = "0123456789@"

// Term is one search word as SQL matches it: by substring of the contact's search text, and
// when Fuzzy also by trigram word similarity (pg_trgm's <%), which forgives a typo in a name.
type Term struct {
	Text  string
	Fuzzy bool
}

// ParseSearch splits a search into lower-cased terms that must all match. A search that looks
// like a phone number, in any format, becomes its digits, matched against the stored number's
// digits; so does each phone-like word of a longer search. Words of three or more characters
// are fuzzy unless they hold a digit or an "@".
func ParseSearch(s string) []Term {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	if isPhoneLike(s) {
		return []Term{{Text: phone.Digits(s)}}
	}
	words := strings.Fields(s)
	terms := make([]Term, 0, len(words))
	for _, w := range words {
		if isPhoneLike(w) {
			terms = append(terms, Term{Text: phone.Digits(w)})
			continue
		}
		w = strings.ToLower(w)
		fuzzy := utf8.RuneCountInString(w) >= fuzzyMinRunes && !strings.ContainsAny(w, exactChars)
		terms = append(terms, Term{Text: w, Fuzzy: fuzzy})
	}
	return terms
}

// isPhoneLike reports whether s has a digit and otherwise only what people type in phone
// numbers: spaces, "+", "-", ".", "(" and ")".
func isPhoneLike(s string) bool {
	hasDigit := false
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9':
			hasDigit = true
		case unicode.IsSpace(r) || strings.ContainsRune("+-.()", r):
		default:
			return false
		}
	}
	return hasDigit
}
