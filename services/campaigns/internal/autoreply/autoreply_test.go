package autoreply

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

var event = Rules{
	Yes: "Great, see you there!",
	No:  "No problem, maybe next time.",
	FAQ: []FAQ{
		{Question: "What time does the show start?", Answer: "Doors open at 7pm."},
		{Question: "Where can I park?", Answer: "Free parking behind the hall."},
		{Question: "Is parking free?", Answer: "Yes, parking is free."},
		{Question: "¿Dónde está el teatro?", Answer: "Calle Mayor 5."},
	},
}

func TestChoosePicksTheAnswerOfTheCategory(t *testing.T) {
	for _, c := range []struct {
		category, text string
		want           Answer
		ok             bool
	}{
		{"affirmative", "Yes!", Answer{KeyYes, event.Yes}, true},
		{"negative", "no thanks", Answer{KeyNo, event.No}, true},
		{"question", "What time does the show start tonight?", Answer{"faq:0", "Doors open at 7pm."}, true},
		{"question", "is there parking nearby?", Answer{"faq:1", "Free parking behind the hall."}, true},
		{"question", "what's the dress code?", Answer{}, false},
		{"opt_out", "STOP", Answer{}, false},
		{"help", "HELP", Answer{}, false},
		{"other", "Where can I park", Answer{}, false}, // only questions get FAQ answers
	} {
		got, ok := Choose(event, c.category, c.text)
		assert.Equal(t, c.ok, ok, "%s %q", c.category, c.text)
		assert.Equal(t, c.want, got, "%s %q", c.category, c.text)
	}
}

func TestChooseWithoutTheAnswerGivesNothing(t *testing.T) {
	faqOnly := Rules{FAQ: event.FAQ}
	for _, category := range []string{"affirmative", "negative"} {
		_, ok := Choose(faqOnly, category, "yes")
		assert.False(t, ok, "%s with no response set", category)
	}
	_, ok := Choose(Rules{Yes: "ok"}, "question", "What time does the show start?")
	assert.False(t, ok, "a question to a campaign without faqReplies")
}

func TestMatch(t *testing.T) {
	questions := make([]string, len(event.FAQ))
	for i, f := range event.FAQ {
		questions[i] = f.Question
	}
	for _, c := range []struct {
		text string
		want int
	}{
		{"What time does the show start?", 0},
		{"WHAT TIME does it start??", 0},   // time, start: 2 of 3
		{"what time is it starting", 0},    // "starting" meets "start"
		{"When does it start?", -1},        // near miss: start is 1 of 3
		{"is the show good?", -1},          // near miss: show is 1 of 3
		{"Any parking?", 1},                // park: 1 of 1 for both parking questions; the earlier
		{"is parking free?", 2},            // 1 of 1 both ways; more words in common
		{"Hi! Where do I park my car?", 1}, // greetings and function words ignored
		{"what is the dress code?", -1},    // nothing in common but function words
		{"¿Dónde está el teatro?", 3},      // Spanish, as typed
		{"donde esta el TEATRO", 3},        // accents and case dropped
		{"¿A qué hora empieza?", -1},       // Spanish with no word of any question
		{"劇場はどこですか？", -1},                  // no spaces: one run, shared with no question
		{"", -1},
		{"???", -1},
	} {
		assert.Equal(t, c.want, Match(questions, c.text), "%q", c.text)
	}
}

func TestMatchIgnoresQuestionsWithoutTopicWords(t *testing.T) {
	assert.Equal(t, -1, Match([]string{"What is it?", "Who are you?"}, "what is it?"),
		"only function words: no question matches on them")
	assert.Equal(t, 1, Match([]string{"What is it?", "Is it free?"}, "is it free"))
}

func TestContentWords(t *testing.T) {
	assert.Equal(t, map[string]bool{"kid": true, "allow": true}, contentWords("Are KIDS allowed?"))
	assert.Equal(t, map[string]bool{"bring": true, "dog": true}, contentWords("Can I bring my dog’s ... dogs?"))
	assert.Equal(t, map[string]bool{"nino": true}, contentWords("¿Niños?"), "accents dropped, then one ending")
	assert.Empty(t, contentWords("What's it? ¿Qué es?"), "function words only")
}
