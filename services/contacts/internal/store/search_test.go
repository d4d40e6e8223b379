package store_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"

	"github.com/chorus-sms/chorus/services/contacts/internal/store"
)

func TestParseSearch(t *testing.T) {
	t.Parallel()
	for in, want := range map[string][]store.Term{
		"":                    nil,
		"   ":                 nil,
		"Jonathan":            {{Text: "jonathan", Fuzzy: true}},
		"jo  SM":              {{Text: "jo"}, {Text: "sm"}},
		"Ann Lee":             {{Text: "ann", Fuzzy: true}, {Text: "lee", Fuzzy: true}},
		"ann.lee@example.org": {{Text: "ann.lee@example.org"}},
		"user1234":            {{Text: "user1234"}},
		"(202) 555-0143":      {{Text: "2025550143"}},
		"+1 202.555.0143":     {{Text: "12025550143"}},
		"maria 555-0143":      {{Text: "maria", Fuzzy: true}, {Text: "5550143"}},
		"100%":                {{Text: "100%"}},
		"o'brien":             {{Text: "o'brien", Fuzzy: true}},
		"- ()":                {{Text: "-"}, {Text: "()"}},
		"Émile":               {{Text: "émile", Fuzzy: true}},
		"né":                  {{Text: "né"}},
	} {
		assert.Equal(t, want, store.ParseSearch(in), "%q", in)
	}
}

// FuzzParseSearch checks the invariants SQL relies on: terms are never empty, are lower-case,
// and are fuzzy exactly when they have 3 or more characters and neither a digit nor an "@".
func FuzzParseSearch(f *testing.F) {
	for _, s := range []string{"Jonathan Smith", "(202) 555-0143", "+1 202 555 0143", "a  b", "100%_", "ÀÉ 12", "\t\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		terms := store.ParseSearch(s)
		if strings.TrimSpace(s) == "" && len(terms) > 0 {
			t.Fatalf("%q: terms from a blank search", s)
		}
		if len(terms) > len(strings.Fields(s)) {
			t.Fatalf("%q: more terms than words: %v", s, terms)
		}
		for _, term := range terms {
			if term.Text == "" {
				t.Fatalf("%q: empty term", s)
			}
			exact := strings.ContainsAny(term.Text, "0123456789@")
			if term.Fuzzy != (!exact && utf8.RuneCountInString(term.Text) >= 3) {
				t.Fatalf("%q: term %q fuzzy=%v", s, term.Text, term.Fuzzy)
			}
			if term.Text != strings.ToLower(term.Text) {
				t.Fatalf("%q: term %q is not lower-case", s, term.Text)
			}
		}
	})
}
