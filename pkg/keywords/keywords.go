// Package keywords is the carrier-compliance keyword list (STOP, START, HELP and their
// synonyms) and how a text is read as one: messaging's inbound classifier acts on it, and
// polls refuse an option a participant could only answer by sending one (the opt-out would
// win over the answer), and messaging refuses such a word as an organization's sign-up keyword.
package keywords

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// Kind is the carrier-compliance keyword an inbound message consists of.
type Kind int

// Keywords, in the order carriers expect them to be honoured.
const (
	None Kind = iota
	OptOut
	OptIn
	Help
)

// String returns the message category name of k ("opt_out", "opt_in", "help"), or "" for
// None, so that a keyword and the category it produces are spelled the same way.
func (k Kind) String() string {
	switch k {
	case OptOut:
		return "opt_out"
	case OptIn:
		return "opt_in"
	case Help:
		return "help"
	default:
		return ""
	}
}

// words maps each canonical keyword word to its kind. YES is deliberately not an opt-in
// word: it is the most common answer to a campaign question and must not re-subscribe anyone.
var words = map[string]Kind{
	"STOP":        OptOut,
	"STOPALL":     OptOut,
	"UNSUBSCRIBE": OptOut,
	"CANCEL":      OptOut,
	"END":         OptOut,
	"QUIT":        OptOut,
	"REVOKE":      OptOut,
	"OPTOUT":      OptOut,
	"START":       OptIn,
	"UNSTOP":      OptIn,
	"HELP":        Help,
	"INFO":        Help,
}

// Detect reports whether the whole of text is a compliance keyword, and which canonical
// word it matched ("STOP", "OPTOUT", ...; "" when none). The text is NFKC-folded (so
// full-width "ＳＴＯＰ" counts), upper-cased, and stripped of everything that is not a letter,
// which makes " Stop! ", "opt-out" and "Un-subscribe" match while "stop it" ("STOPIT") and
// "please don't stop" do not.
func Detect(text string) (Kind, string) {
	word := lettersUpper(text)
	if k, ok := words[word]; ok {
		return k, word
	}
	return None, ""
}

// longestKeyword bounds the work done on long messages, which can never be a keyword.
const longestKeyword = len("UNSUBSCRIBE")

// lettersUpper returns the letters of the NFKC form of s, upper-cased. It gives up with ""
// once more letters than the longest keyword have been seen.
func lettersUpper(s string) string {
	var b strings.Builder
	n := 0
	for _, r := range norm.NFKC.String(s) {
		// Upper-case before testing, so a mark that upper-cases to a letter (U+0345 → Ι)
		// counts the same whatever the case of the input.
		r = unicode.ToUpper(r)
		if !unicode.IsLetter(r) {
			continue
		}
		if n++; n > longestKeyword {
			return ""
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Reserved reports whether word may not be an organization's own keyword (a sign-up keyword):
// it reads as a compliance keyword (so "Stop", "opt-out" and "STOP2", whose letters spell
// STOP, are all reserved; an inbound message of it would be taken as that keyword), or it is
// YES, which carriers' own opt-in handling (Twilio's default opt-in list: START, YES, UNSTOP)
// takes before it reaches us.
func Reserved(word string) bool {
	if k, _ := Detect(word); k != None {
		return true
	}
	return lettersUpper(word) == "YES"
}

// Fold is how an organization's keyword and an inbound message are compared: the letters and
// digits of the NFKC form of text, upper-cased, everything else dropped (so " join! ",
// "Join" and "ＪＯＩＮ" all fold to "JOIN"). It answers "" once more than max letters and
// digits have been seen: a longer message is no keyword.
func Fold(text string, max int) string {
	var b strings.Builder
	n := 0
	for _, r := range norm.NFKC.String(text) {
		r = unicode.ToUpper(r)
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			continue
		}
		if n++; n > max {
			return ""
		}
		b.WriteRune(r)
	}
	return b.String()
}
