package classify

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// Keyword is the carrier-compliance keyword an inbound message consists of.
type Keyword int

// Keywords, in the order carriers expect them to be honoured.
const (
	KeywordNone Keyword = iota
	KeywordOptOut
	KeywordOptIn
	KeywordHelp
)

// String returns the category name of k ("opt_out", "opt_in", "help"), or "" for KeywordNone,
// so that a keyword and the Category it produces are spelled the same way.
func (k Keyword) String() string {
	switch k {
	case KeywordOptOut:
		return CategoryOptOut
	case KeywordOptIn:
		return CategoryOptIn
	case KeywordHelp:
		return CategoryHelp
	default:
		return ""
	}
}

// keywords maps each canonical keyword word to its kind. YES is deliberately not an opt-in
// word: it is the most common answer to a campaign question and must not re-subscribe anyone.
var keywords = map[string]Keyword{
	"STOP":        KeywordOptOut,
	"STOPALL":     KeywordOptOut,
	"UNSUBSCRIBE": KeywordOptOut,
	"CANCEL":      KeywordOptOut,
	"END":         KeywordOptOut,
	"QUIT":        KeywordOptOut,
	"REVOKE":      KeywordOptOut,
	"OPTOUT":      KeywordOptOut,
	"START":       KeywordOptIn,
	"UNSTOP":      KeywordOptIn,
	"HELP":        KeywordHelp,
	"INFO":        KeywordHelp,
}

// DetectKeyword reports whether the whole of text is a compliance keyword, and which canonical
// word it matched ("STOP", "OPTOUT", ...; "" when none). The text is NFKC-folded (so
// full-width "ＳＴＯＰ" counts), upper-cased, and stripped of everything that is not a letter,
// which makes " Stop! ", "opt-out" and "Un-subscribe" match while "stop it" ("STOPIT") and
// "please don't stop" do not.
func DetectKeyword(text string) (Keyword, string) {
	word := lettersUpper(text)
	if k, ok := keywords[word]; ok {
		return k, word
	}
	return KeywordNone, ""
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
