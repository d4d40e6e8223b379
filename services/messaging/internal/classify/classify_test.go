package classify

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestClassifyCategories(t *testing.T) {
	tests := []struct {
		text, category string
	}{
		{"STOP", CategoryOptOut},
		{"Unsubscribe.", CategoryOptOut},
		{"start", CategoryOptIn},
		{"Help!", CategoryHelp},
		{"What time does it start?", CategoryQuestion},
		{"is this still available", CategoryQuestion},
		{"Who is this", CategoryQuestion},
		{"can I bring a friend", CategoryQuestion},
		{"yes?", CategoryQuestion},
		{"¿Dónde", CategoryQuestion},
		{"Yes", CategoryAffirmative},
		{"y", CategoryAffirmative},
		{"Yes please!", CategoryAffirmative},
		{"ok see you then", CategoryAffirmative},
		{"Sure, sounds good", CategoryAffirmative},
		{"👍", CategoryAffirmative},
		{"👍🏽", CategoryAffirmative},
		{"Will do", CategoryAffirmative},
		{"no problem", CategoryAffirmative},
		{"I'm in", CategoryAffirmative},
		{"No", CategoryNegative},
		{"nope.", CategoryNegative},
		{"No thanks", CategoryNegative},
		{"Not interested", CategoryNegative},
		{"never", CategoryNegative},
		{"👎", CategoryNegative},
		{"No I never signed up for this list", CategoryOther},
		{"yesterday was fun", CategoryOther},
		{"Do not forget the tickets", CategoryOther},
		{"Do not text me", CategoryOptOut},
		{"Thanks for the reminder", CategoryOther},
		{"stop it", CategoryOptOut},
		{"stop by the store at 5", CategoryOther},
		{"", CategoryOther},
		{"🎉🎉", CategoryOther},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.category, Classify(tt.text).Category, "%q", tt.text)
	}
}

func TestClassifyKeywordFields(t *testing.T) {
	r := Classify(" Opt-out. ")
	assert.Equal(t, KeywordOptOut, r.Keyword)
	assert.Equal(t, "OPTOUT", r.Word)

	r = Classify("stop texting me")
	assert.Equal(t, KeywordNone, r.Keyword)
	assert.Empty(t, r.Word)
}

// A revocation in words is an opt-out recorded as such when the rules are sure of it, and a
// message for a person, still in its own category, when they are not.
func TestClassifyRevocation(t *testing.T) {
	r := Classify("Please stop texting me")
	assert.True(t, r.OptsOut())
	assert.Equal(t, CategoryOptOut, r.Category)
	assert.True(t, r.OptOutDetected)
	assert.False(t, r.RequiresResponse)
	assert.Equal(t, "text:stop-messaging", r.ConsentSource())

	r = Classify("how do I stop these texts?")
	assert.False(t, r.OptsOut())
	assert.Equal(t, CategoryQuestion, r.Category)
	assert.True(t, r.OptOutDetected)
	assert.True(t, r.RequiresResponse)

	r = Classify("Leave me alone")
	assert.False(t, r.OptsOut())
	assert.Equal(t, CategoryOther, r.Category)
	assert.True(t, r.OptOutDetected)
	assert.True(t, r.RequiresResponse)

	r = Classify("STOP")
	assert.True(t, r.OptsOut())
	assert.Equal(t, RevocationNone, r.Revocation, "a keyword is no revocation in words")
	assert.Equal(t, "keyword:STOP", r.ConsentSource())

	r = Classify("stop by the store at 5")
	assert.False(t, r.OptsOut())
	assert.False(t, r.OptOutDetected)
}

func TestClassifySentiment(t *testing.T) {
	tests := []struct {
		text, sentiment string
	}{
		{"Thank you so much, this is great!", SentimentPositive},
		{"I love it ❤️", SentimentPositive},
		{"This is terrible, I hate these texts", SentimentNegative},
		{"This is the worst service ever!!!", SentimentNegative},
		{"The meeting is at 3pm on Tuesday", SentimentNeutral},
		{"", SentimentNeutral},
	}
	for _, tt := range tests {
		r := Classify(tt.text)
		assert.Equal(t, tt.sentiment, r.Sentiment, "%q (score %v)", tt.text, r.Score)
	}
	assert.Greater(t, Classify("GREAT!!!").Score, Classify("great").Score,
		"capitals and exclamation marks intensify, as in VADER")
	assert.Equal(t, Classify("so\n\nbad").Score, Classify("so bad").Score,
		"newlines separate words like spaces")
}

func TestClassifyRequiresResponse(t *testing.T) {
	for text, want := range map[string]bool{
		"When is the next event?":              true,
		"HELP":                                 true,
		"This is the worst service ever!!!":    true,
		"STOP":                                 false,
		"START":                                false,
		"Yes":                                  false,
		"No thanks":                            false,
		"Thanks so much, this is great!":       false,
		"The meeting is at 3pm on Tuesday":     false,
		"I hate these texts, they're terrible": true,
	} {
		assert.Equal(t, want, Classify(text).RequiresResponse, "%q", text)
	}
}
