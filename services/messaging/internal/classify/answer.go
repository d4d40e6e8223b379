package classify

import (
	"strings"
	"unicode"
)

// maxAnswerWords is the longest message still read as a short yes/no answer.
const maxAnswerWords = 4

// answers maps answer phrases (words joined by single spaces) to their category; reactions
// are the emoji among them, which count as a word of their own; maxPhraseWords is the number
// of words in the longest phrase.
var answers, reactions, maxPhraseWords = answerPhrases(map[string][]string{
	CategoryAffirmative: {
		"yes", "y", "ya", "yea", "yeah", "yep", "yup", "yes please", "sure", "sure thing",
		"ok", "okay", "k", "kk", "alright", "all right", "confirm", "confirmed", "absolutely",
		"definitely", "certainly", "of course", "correct", "agreed", "i agree",
		"sounds good", "will do", "count me in", "im in", "no problem", "no worries",
		"👍", "👌", "✅", "✔", "🙌", "🆗",
	},
	CategoryNegative: {
		"no", "n", "nope", "nah", "no thanks", "no thank you", "not interested", "not now",
		"no way", "never", "negative", "👎", "❌", "✖", "🚫",
	},
})

func answerPhrases(byCategory map[string][]string) (map[string]string, map[rune]bool, int) {
	answers := map[string]string{}
	reactions := map[rune]bool{}
	longest := 0
	for cat, phrases := range byCategory {
		for _, p := range phrases {
			answers[p] = cat
			longest = max(longest, len(strings.Fields(p)))
			if r := []rune(p); len(r) == 1 && !unicode.IsLetter(r[0]) {
				reactions[r[0]] = true
			}
		}
	}
	return answers, reactions, longest
}

var interrogatives = map[string]bool{
	"who": true, "what": true, "when": true, "where": true, "which": true, "why": true,
	"how": true, "can": true, "could": true, "would": true, "will": true, "is": true,
	"are": true, "do": true, "does": true, "did": true, "may": true, "should": true,
}

// tokens splits NFKC-folded text into lower-case words (runs of letters and digits, with
// apostrophes inside a word dropped) and reaction emoji. Anything else separates words.
func tokens(folded string) []string {
	var words []string
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			words = append(words, cur.String())
			cur.Reset()
		}
	}
	for _, r := range folded {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			cur.WriteRune(unicode.ToLower(r))
		case (r == '\'' || r == '’') && cur.Len() > 0:
			// "don't" and "I'm" stay one word.
		case reactions[r]:
			flush()
			words = append(words, string(r))
		default:
			flush()
		}
	}
	flush()
	return words
}

// shortAnswer returns the category of the longest answer phrase that words begin with, or ""
// when there is none or the message is too long to be a short answer.
func shortAnswer(words []string) string {
	if len(words) == 0 || len(words) > maxAnswerWords {
		return ""
	}
	for n := min(maxPhraseWords, len(words)); n > 0; n-- {
		if c, ok := answers[strings.Join(words[:n], " ")]; ok {
			return c
		}
	}
	return ""
}
