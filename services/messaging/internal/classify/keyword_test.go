package classify

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDetectKeywordEveryWordAndVariant(t *testing.T) {
	tests := []struct {
		word string
		kind Keyword
	}{
		{"STOP", KeywordOptOut}, {"STOPALL", KeywordOptOut}, {"UNSUBSCRIBE", KeywordOptOut},
		{"CANCEL", KeywordOptOut}, {"END", KeywordOptOut}, {"QUIT", KeywordOptOut},
		{"REVOKE", KeywordOptOut}, {"OPTOUT", KeywordOptOut},
		{"START", KeywordOptIn}, {"UNSTOP", KeywordOptIn},
		{"HELP", KeywordHelp}, {"INFO", KeywordHelp},
	}
	for _, tt := range tests {
		lower := strings.ToLower(tt.word)
		title := strings.ToUpper(lower[:1]) + lower[1:]
		for _, in := range []string{
			tt.word, lower, title, " " + title + "! ", lower + ".", "\t" + tt.word + "\n",
			"**" + lower + "**", `"` + tt.word + `"`, fullWidth(tt.word),
		} {
			kind, word := DetectKeyword(in)
			assert.Equal(t, tt.kind, kind, "%q", in)
			assert.Equal(t, tt.word, word, "%q", in)
		}
	}
}

func TestDetectKeywordSpelledWithSeparators(t *testing.T) {
	for in, want := range map[string]string{
		"opt out":      "OPTOUT",
		"Opt-Out":      "OPTOUT",
		"opt_out":      "OPTOUT",
		"Un-subscribe": "UNSUBSCRIBE",
		"S.T.O.P":      "STOP",
		"stop all":     "STOPALL",
		"STOP 🛑":       "STOP",
		"ſtop":         "STOP", // long s folds to s under NFKC
	} {
		_, word := DetectKeyword(in)
		assert.Equal(t, want, word, "%q", in)
	}
}

func TestDetectKeywordNeedsTheWholeMessage(t *testing.T) {
	for _, in := range []string{
		"please don't stop texting me", "stop it", "Stop texting me", "help me", "info please",
		"I want to cancel my order", "the end", "yes", "YES", "unsubscribed", "stopp", "",
		"   ", "!!!", "🛑", "👍🏽", "stöp", "STOP STOP",
	} {
		kind, word := DetectKeyword(in)
		assert.Equal(t, KeywordNone, kind, "%q", in)
		assert.Empty(t, word, "%q", in)
	}
}

func TestKeywordStringMatchesCategory(t *testing.T) {
	assert.Equal(t, "", KeywordNone.String())
	assert.Equal(t, CategoryOptOut, KeywordOptOut.String())
	assert.Equal(t, CategoryOptIn, KeywordOptIn.String())
	assert.Equal(t, CategoryHelp, KeywordHelp.String())
}

// fullWidth spells an ASCII word in full-width letters, as some phone keyboards send it.
func fullWidth(s string) string {
	return strings.Map(func(r rune) rune { return r - 'A' + 'Ａ' }, s)
}

// The keyword kinds are spelled as the categories they produce.
func TestKeywordNamesAreCategories(t *testing.T) {
	assert.Equal(t, CategoryOptOut, KeywordOptOut.String())
	assert.Equal(t, CategoryOptIn, KeywordOptIn.String())
	assert.Equal(t, CategoryHelp, KeywordHelp.String())
	assert.Empty(t, KeywordNone.String())
}
