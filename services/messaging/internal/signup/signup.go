// Package signup is the rules of sign-up keywords: what an organization may choose as one, how
// an inbound text is matched against them, and the confirmation a new subscriber is sent, which
// must name the brand, say how often messages come, that message and data rates may apply,
// and how to stop or get help (CTIA's opt-in confirmation).
package signup

import (
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/chorus-sms/chorus/pkg/keywords"
	"github.com/chorus-sms/chorus/pkg/smsrules"
)

// Bounds of a keyword's fields.
const (
	MaxWordLen      = 20
	MaxFrequencyLen = 100
)

// The compliance sentences a confirmation gets unless it says them already.
const (
	RatesNotice = "Msg & data rates may apply."
	StopHelp    = "Reply STOP to opt out, HELP for help."
)

var (
	wordPattern = regexp.MustCompile(`^[A-Za-z0-9]{1,` + strconv.Itoa(MaxWordLen) + `}$`)
	saysRates   = regexp.MustCompile(`(?i)\bdata rates may apply\b`)
	saysStop    = regexp.MustCompile(`(?i)\bstop\b`)
	saysHelp    = regexp.MustCompile(`(?i)\bhelp\b`)
)

// Word checks a requested keyword and answers its stored form (upper-case), or what is wrong
// with it.
func Word(raw string) (word, problem string) {
	w := strings.TrimSpace(raw)
	switch {
	case !wordPattern.MatchString(w):
		return "", "must be 1 to " + strconv.Itoa(MaxWordLen) + " letters and digits (A-Z, 0-9)"
	case keywords.Reserved(w):
		return "", "is a carrier keyword (STOP, STOPALL, UNSUBSCRIBE, CANCEL, END, QUIT, REVOKE, OPTOUT, START, UNSTOP, YES, HELP, INFO, in any spelling) and cannot be a sign-up keyword"
	}
	return strings.ToUpper(w), ""
}

// Match is the stored form of the keyword an inbound text would be, read as compliance
// keywords are read (any case, spacing and punctuation: "join!", "Join"), or "" when the text
// is too long to be one.
func Match(text string) string { return keywords.Fold(text, MaxWordLen) }

// Frequency checks the stated message frequency and answers it trimmed, or what is wrong.
func Frequency(raw string) (frequency, problem string) {
	f := strings.TrimSpace(raw)
	if f == "" || utf8.RuneCountInString(f) > MaxFrequencyLen {
		return f, "must say how often subscribers are texted, e.g. \"Up to 4 msgs/month\" (1 to " + strconv.Itoa(MaxFrequencyLen) + " characters)"
	}
	return f, ""
}

// Confirmation is the text a subscriber is sent: brand (the organization's name) first unless
// the confirmation names it, the organization's confirmation, the frequency unless it is
// there already, the rates notice and the STOP/HELP instructions unless the confirmation has
// them, normalized as every outgoing text is (smsrules.Normalize).
func Confirmation(brand, confirmation, frequency string) string {
	c := strings.TrimSpace(confirmation)
	parts := make([]string, 0, 4)
	if brand = strings.TrimSpace(brand); brand != "" && !containsFold(c, brand) {
		c = brand + ": " + c
	}
	parts = append(parts, sentence(c))
	if f := strings.TrimSpace(frequency); f != "" && !containsFold(c, f) {
		parts = append(parts, sentence(f))
	}
	if !saysRates.MatchString(c) {
		parts = append(parts, RatesNotice)
	}
	if !saysStop.MatchString(c) || !saysHelp.MatchString(c) {
		parts = append(parts, StopHelp)
	}
	return smsrules.Normalize(strings.Join(parts, " "))
}

// CheckLength answers what is wrong with a confirmation whose final text is text: nothing, or
// that it is over the one limit of every outgoing text.
func CheckLength(text string) string {
	if n := utf8.RuneCountInString(text); n > smsrules.MaxTextLength {
		return "with the brand, frequency and compliance notice the confirmation would be " + strconv.Itoa(n) +
			" characters; an outgoing text has at most " + strconv.Itoa(smsrules.MaxTextLength)
	}
	return ""
}

// sentence ends s with a full stop unless it ends with punctuation of its own.
func sentence(s string) string {
	if s == "" || strings.ContainsRune(".!?", rune(s[len(s)-1])) {
		return s
	}
	return s + "."
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}
