package autoreply

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// stopWords carry no topic: English and Spanish function words, interrogatives and
// greetings. Without them "What is the dress code?" and "What time is it?" share nothing.
var stopWords = setOf(
	// English
	"a", "about", "am", "an", "and", "any", "anything", "are", "as", "at", "be", "been", "but", "by",
	"can", "could", "did", "do", "does", "for", "from", "get", "have", "has", "hello", "hey", "hi",
	"how", "i", "if", "im", "in", "is", "it", "its", "just", "know", "let", "like", "may", "me", "my",
	"of", "on", "or", "our", "please", "should", "so", "some", "tell", "thank", "thanks", "that",
	"the", "their", "there", "these", "this", "to", "u", "us", "want", "was", "we", "were", "what",
	"whats", "when", "where", "which", "who", "why", "will", "with", "would", "you", "your",
	// Spanish
	"al", "como", "con", "cual", "cuando", "de", "del", "donde", "el", "en", "es", "esta", "hay",
	"hola", "la", "las", "lo", "los", "mi", "para", "por", "puedo", "que", "se", "su", "un", "una",
	"y", "yo",
)

func setOf(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

// contentWords returns the distinct topic words of text, each reduced to a stem: NFKC
// folded, accents dropped, lower-cased, split on anything that is not a letter or digit
// (apostrophes inside a word are dropped, so "what's" is "whats"), stop words removed.
func contentWords(text string) map[string]bool {
	words := map[string]bool{}
	for _, w := range strings.FieldsFunc(fold(text), isSeparator) {
		w = strings.ReplaceAll(w, "'", "")
		if w == "" || stopWords[w] {
			continue
		}
		words[stem(w)] = true
	}
	return words
}

// fold lower-cases text and drops its accents ("Dónde" and "donde" are one word, as people
// often type them without), with apostrophe look-alikes made plain.
func fold(text string) string {
	var b strings.Builder
	for _, r := range norm.NFKD.String(text) {
		switch {
		case unicode.Is(unicode.Mn, r):
		case r == '’' || r == 'ʼ':
			b.WriteRune('\'')
		default:
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

func isSeparator(r rune) bool {
	return r != '\'' && !unicode.IsLetter(r) && !unicode.IsDigit(r)
}

// stem drops one English inflection so that "parking", "parked" and "parks" meet "park":
// -ing (from 6 letters), -ed (from 5), a plural -s (from 4, not -ss). Both sides of a
// comparison are stemmed alike, so a wrong stem in another language costs nothing.
func stem(w string) string {
	n := len([]rune(w))
	switch {
	case n >= 6 && strings.HasSuffix(w, "ing"):
		return strings.TrimSuffix(w, "ing")
	case n >= 5 && strings.HasSuffix(w, "ed"):
		return strings.TrimSuffix(w, "ed")
	case n >= 4 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss"):
		return strings.TrimSuffix(w, "s")
	}
	return w
}
