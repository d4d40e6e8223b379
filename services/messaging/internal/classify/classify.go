// Package classify labels one inbound SMS: the compliance keyword it is (if any), a category,
// a VADER sentiment, and whether a person should answer it.
//
// Category rules, applied in this order; the first that matches wins:
//
//  1. opt_out, opt_in, help: the whole message is a compliance keyword (see DetectKeyword).
//     Opt-out: STOP, STOPALL, UNSUBSCRIBE, CANCEL, END, QUIT, REVOKE, OPTOUT; opt-in: START,
//     UNSTOP; help: HELP, INFO. Case, spacing, punctuation and full-width forms are ignored.
//     opt_out too: a high-confidence revocation in words of its own, such as "please stop
//     texting me" or "bórrenme de la lista" (see DetectRevocation and revoke.go).
//  2. question: the message contains a question mark ("?", full-width "？" or "¿").
//  3. affirmative / negative: the message is a short answer. It is split into words (runs of
//     letters and digits, apostrophes dropped, so "don't" is "dont") and reaction emoji; it
//     must have 1 to 4 words and begin with a known answer phrase. The longest phrase wins, so
//     "no problem" is affirmative although "no" is negative.
//     Affirmative: yes, y, ya, yea, yeah, yep, yup, yes please, sure, sure thing, ok, okay, k,
//     kk, alright, all right, confirm, confirmed, absolutely, definitely, certainly, of course,
//     correct, agreed, i agree, sounds good, will do, count me in, im in, no problem,
//     no worries, 👍 👌 ✅ ✔ 🙌 🆗.
//     Negative: no, n, nope, nah, no thanks, no thank you, not interested, not now, no way,
//     never, negative, 👎 ❌ ✖ 🚫.
//     So "Yes!", "ok see you then" and "No thanks." are answers; "No I never signed up for
//     this list" (8 words) is not.
//  4. question: the first word is an interrogative (who, what, when, where, which, why, how,
//     can, could, would, will, is, are, do, does, did, may, should) and the second word is
//     not "not" ("Do not text me" is a demand, not a question).
//  5. other: everything else.
//
// Sentiment is VADER's compound score on the raw text (so capitals, "!!!" and emoji count):
// positive when ≥ 0.05, negative when ≤ -0.05, neutral in between (the thresholds of the
// VADER paper).
//
// RequiresResponse is true for question and help, for other messages with negative sentiment
// (complaints), and for a low-confidence revocation, which only a person can tell from chatter.
// Opt-outs (keyword or high-confidence revocation) and opt-ins are answered automatically by
// the compliance flow, and answers, neutral and positive chatter need no human.
//
// OptOutDetected is true for every opt-out and for a low-confidence revocation too.
package classify

import (
	"strings"

	"golang.org/x/text/unicode/norm"
)

// Categories of an inbound message; see the package comment for the rules.
const (
	CategoryOptOut      = "opt_out"
	CategoryOptIn       = "opt_in"
	CategoryHelp        = "help"
	CategoryQuestion    = "question"
	CategoryAffirmative = "affirmative"
	CategoryNegative    = "negative"
	CategoryOther       = "other"
)

// Result is everything Classify learns about one message.
type Result struct {
	Keyword Keyword
	// Word is the canonical keyword matched, e.g. "STOP", "UNSUBSCRIBE"; "" when none.
	Word string
	// Revocation is how surely a message that is no keyword revokes consent in words of its
	// own; Rule names the rule that said so ("" with RevocationNone).
	Revocation       Revocation
	Rule             string
	Category         string
	Sentiment        string
	Score            float64 // VADER compound score in [-1, 1]
	RequiresResponse bool
	OptOutDetected   bool
}

// OptsOut reports whether the message withdraws consent and is acted on as STOP is: a keyword
// or a high-confidence revocation.
func (r Result) OptsOut() bool {
	return r.Keyword == KeywordOptOut || r.Revocation == RevocationHigh
}

// ConsentSource is how a consent change made by the message is recorded in contacts' audit
// trail: "keyword:STOP" for a keyword, "text:<rule>" for a revocation in words.
func (r Result) ConsentSource() string {
	if r.Keyword == KeywordNone && r.Rule != "" {
		return "text:" + r.Rule
	}
	return "keyword:" + r.Word
}

// Classify labels one inbound message. It never fails: any string, including empty,
// emoji-only or invalid UTF-8 text, gets a Result.
func Classify(text string) Result {
	kw, word := DetectKeyword(text)
	score := compound(text)
	r := Result{
		Keyword:   kw,
		Word:      word,
		Category:  category(kw, text),
		Sentiment: sentimentOf(score),
		Score:     score,
	}
	if kw == KeywordNone {
		r.Revocation, r.Rule = DetectRevocation(text)
	}
	if r.Revocation == RevocationHigh {
		r.Category = CategoryOptOut
	}
	switch r.Category {
	case CategoryQuestion, CategoryHelp:
		r.RequiresResponse = true
	case CategoryOther:
		r.RequiresResponse = r.Sentiment == SentimentNegative
	}
	r.RequiresResponse = r.RequiresResponse || r.Revocation == RevocationLow
	r.OptOutDetected = r.OptsOut() || r.Revocation == RevocationLow
	return r
}

func category(kw Keyword, text string) string {
	if kw != KeywordNone {
		return kw.String()
	}
	folded := norm.NFKC.String(text)
	if strings.ContainsAny(folded, "?¿") {
		return CategoryQuestion
	}
	words := tokens(folded)
	if c := shortAnswer(words); c != "" {
		return c
	}
	if len(words) > 0 && interrogatives[words[0]] && (len(words) == 1 || words[1] != "not") {
		return CategoryQuestion
	}
	return CategoryOther
}
