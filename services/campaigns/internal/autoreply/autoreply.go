// Package autoreply picks a campaign's automatic answer to an inbound message attributed to it.
// It reads the category messaging's classifier gave the message (carried on message.received:
// one classifier for campaigns and polls) and, for questions, matches the text against the
// campaign's FAQ questions.
//
// The rules:
//   - affirmative → the campaign's yesResponse; negative → its noResponse;
//   - question → the answer of the best-matching faqReply (Match), if any matches;
//   - anything else (opt-out and other keywords, chatter) → nothing.
//
// An answer the campaign does not have is no answer: no fallback to another one.
package autoreply

import "strconv"

// Categories of messaging's classifier (services/messaging/internal/classify) that get an
// answer.
const (
	CategoryAffirmative = "affirmative"
	CategoryNegative    = "negative"
	CategoryQuestion    = "question"
)

// Keys of the answers a campaign has; an FAQ's key is "faq:" and its position.
const (
	KeyYes = "yes"
	KeyNo  = "no"
)

// FAQ is one of a campaign's questions and its answer.
type FAQ struct {
	Question, Answer string
}

// Rules are a campaign's auto-reply settings; an empty Yes or No is unset.
type Rules struct {
	Yes, No string
	FAQ     []FAQ
}

// Answer is the text to send and which of the campaign's answers it is (KeyYes, KeyNo, or
// "faq:<index>"), so that a contact can be given each answer once.
type Answer struct {
	Key, Body string
}

// Choose returns the answer to a message of category with text, and false when there is none.
func Choose(r Rules, category, text string) (Answer, bool) {
	switch category {
	case CategoryAffirmative:
		return Answer{Key: KeyYes, Body: r.Yes}, r.Yes != ""
	case CategoryNegative:
		return Answer{Key: KeyNo, Body: r.No}, r.No != ""
	case CategoryQuestion:
		questions := make([]string, len(r.FAQ))
		for i, f := range r.FAQ {
			questions[i] = f.Question
		}
		i := Match(questions, text)
		if i < 0 {
			return Answer{}, false
		}
		return Answer{Key: faqKey(i), Body: r.FAQ[i].Answer}, true
	}
	return Answer{}, false
}

func faqKey(i int) string { return "faq:" + strconv.Itoa(i) }
