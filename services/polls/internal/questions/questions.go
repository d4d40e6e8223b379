// Package questions is a poll's question list: its validation (issue 12's rules, each problem
// named by its REST field, e.g. questions[2].options), the matching of a reply to a question,
// and the path a participant takes through the questions.
package questions

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/keywords"
	"github.com/chorus-sms/chorus/pkg/mergefields"
)

// Question types.
const (
	MultipleChoice = "multiple_choice"
	OpenEnded      = "open_ended"
)

// Limits (spec section 8; the text and code lengths are ours).
const (
	MinQuestions = 1
	MaxQuestions = 20
	MinOptions   = 2
	MaxOptions   = 9
	maxCode      = 100
	maxLabel     = 100
)

// Option is one answer of a multiple_choice question.
type Option struct {
	Code  string `json:"code"`
	Label string `json:"label"`
}

// Branching sends the participant to NextQuestion when the answer's code equals Condition.
type Branching struct {
	Condition    string `json:"condition"`
	NextQuestion int    `json:"nextQuestion"`
}

// Question is one question as stored (jsonb) and served.
type Question struct {
	Number       int        `json:"questionNumber"`
	Text         string     `json:"text"`
	Type         string     `json:"type"`
	Options      []Option   `json:"options,omitempty"`
	ResponseCode string     `json:"responseCode"`
	Branching    *Branching `json:"branchingLogic,omitempty"`
}

// Validate adds to f every way qs breaks the rules: 1 to 20 questions numbered from 1 without
// gaps (in order); type multiple_choice or open_ended; a multiple_choice question has 2 to 9
// options with unique (case-insensitive), non-empty codes and labels, none of them a carrier
// keyword, labels at most 100 characters (an open_ended one none); responseCode required and
// unique in the poll; branchingLogic's condition one of the question's option codes and
// nextQuestion a later question of the poll.
func Validate(qs []Question, f apierr.Fields) {
	if len(qs) < MinQuestions || len(qs) > MaxQuestions {
		f.Add("questions", fmt.Sprintf("must hold %d to %d questions", MinQuestions, MaxQuestions))
		return
	}
	codes := map[string]int{}
	for i, q := range qs {
		field := fmt.Sprintf("questions[%d]", i)
		if q.Number != i+1 {
			f.Add(field+".questionNumber", fmt.Sprintf("must be %d: questions are numbered from 1 without gaps, in order", i+1))
		}
		switch t := strings.TrimSpace(q.Text); {
		case t == "":
			f.Add(field+".text", "is required")
		case q.Type == MultipleChoice && len(q.Options) > 0:
			// The re-ask ("Please reply A or B. " and the question) is sent too.
			mergefields.CheckFits(f, field+".text", q.ReaskText(), true, "re-asked with its codes")
		default:
			mergefields.CheckFits(f, field+".text", t, true, "")
		}
		switch rc := strings.TrimSpace(q.ResponseCode); {
		case rc == "":
			f.Add(field+".responseCode", "is required")
		case utf8.RuneCountInString(rc) > maxCode:
			f.Add(field+".responseCode", fmt.Sprintf("must be at most %d characters", maxCode))
		default:
			if j, dup := codes[strings.ToLower(rc)]; dup {
				f.Add(field+".responseCode", fmt.Sprintf("must be unique in the poll (questions[%d] has it)", j))
			}
			codes[strings.ToLower(rc)] = i
		}
		switch q.Type {
		case MultipleChoice:
			validateOptions(q.Options, field+".options", f)
		case OpenEnded:
			if len(q.Options) > 0 {
				f.Add(field+".options", "an open_ended question has no options")
			}
		default:
			f.Add(field+".type", "must be multiple_choice or open_ended")
		}
		if b := q.Branching; b != nil {
			if q.Type != MultipleChoice || !q.hasCode(b.Condition) {
				f.Add(field+".branchingLogic.condition", "must be one of the question's option codes")
			}
			if b.NextQuestion <= q.Number || b.NextQuestion > len(qs) {
				f.Add(field+".branchingLogic.nextQuestion", fmt.Sprintf("must be a later question of the poll (%d to %d)", q.Number+1, len(qs)))
			}
		}
	}
}

func validateOptions(opts []Option, field string, f apierr.Fields) {
	if len(opts) < MinOptions || len(opts) > MaxOptions {
		f.Add(field, fmt.Sprintf("a multiple_choice question has %d to %d options", MinOptions, MaxOptions))
		return
	}
	codes, labels := map[string]int{}, map[string]int{}
	for i, o := range opts {
		of := fmt.Sprintf("%s[%d]", field, i)
		optionText(f, of+".code", o.Code, maxCode, codes, i, field)
		optionText(f, of+".label", o.Label, maxLabel, labels, i, field)
	}
}

// optionText checks an option's code or label (the i-th of the question's options under
// field): non-empty, at most limit characters, no carrier keyword, and unique among seen
// (case-insensitive, as replies compare).
func optionText(f apierr.Fields, name, s string, limit int, seen map[string]int, i int, field string) {
	v := Normalize(s)
	switch {
	case v == "":
		f.Add(name, "is required")
		return
	case utf8.RuneCountInString(v) > limit:
		f.Add(name, fmt.Sprintf("must be at most %d characters", limit))
	case isKeyword(v):
		f.Add(name, keywordProblem)
	}
	if j, dup := seen[v]; dup {
		f.Add(name, fmt.Sprintf("must be unique in the question, case-insensitive (%s[%d] has it)", field, j))
	}
	seen[v] = i
}

// keywordProblem is why an option may not be a carrier keyword: a reply of it is read as the
// keyword (STOP opts the contact out of everything) before it could be an answer, and a
// participant may reply the label as well as the code.
const keywordProblem = "must not be a carrier keyword (STOP, END, CANCEL, QUIT, UNSUBSCRIBE, REVOKE, OPTOUT, STOPALL, HELP, INFO, START, UNSTOP): a reply of it opts the contact out, in, or asks for help instead of answering"

// isKeyword is whether s, sent as a reply, would be taken as a compliance keyword.
func isKeyword(s string) bool {
	k, _ := keywords.Detect(s)
	return k != keywords.None
}

// Normalize is how replies and codes compare: trimmed, case-folded, inner spaces collapsed.
func Normalize(s string) string {
	return strings.ToLower(strings.Join(strings.Fields(s), " "))
}

func (q *Question) hasCode(code string) bool {
	for _, o := range q.Options {
		if Normalize(o.Code) == Normalize(code) {
			return true
		}
	}
	return false
}

// Match reads reply as an answer to q: for multiple_choice the option whose code equals the
// trimmed, case-insensitive reply, its code returned (the spec requires one of the option
// codes, so a label is no answer: it gets the re-ask, which lists the codes); for open_ended
// any non-blank text, code "". ok is false for a reply that does not answer q.
func (q *Question) Match(reply string) (code string, ok bool) {
	r := Normalize(reply)
	if r == "" {
		return "", false
	}
	if q.Type == OpenEnded {
		return "", true
	}
	for _, o := range q.Options {
		if Normalize(o.Code) == r {
			return o.Code, true
		}
	}
	return "", false
}

// Next is the question after q answered with code (0 when q was the last on the path): its
// branchingLogic's nextQuestion when code equals the condition, else the next in order.
func (q *Question) Next(code string, count int) int {
	if b := q.Branching; b != nil && code != "" && Normalize(code) == Normalize(b.Condition) {
		return b.NextQuestion
	}
	if q.Number >= count {
		return 0
	}
	return q.Number + 1
}

// Codes lists q's option codes, for the re-ask ("Please reply A, B or C").
func (q *Question) Codes() []string {
	out := make([]string, len(q.Options))
	for i, o := range q.Options {
		out[i] = o.Code
	}
	return out
}

// ReaskText is what a participant whose reply did not answer q gets: the valid codes, then
// the question again.
func (q *Question) ReaskText() string {
	codes := q.Codes()
	list := strings.Join(codes, ", ")
	if n := len(codes); n > 1 {
		list = strings.Join(codes[:n-1], ", ") + " or " + codes[n-1]
	}
	return "Please reply " + list + ". " + q.Text
}

// LongestPath is the highest cost of the questions one participant can be sent, from question
// 1 to the end along any branch, where cost(n) prices question n for that participant. Branches
// only jump forward, so it is one pass from the last question back.
func LongestPath(qs []Question, cost func(n int) int32) int32 {
	best := make([]int32, len(qs)+2) // best[n]: the costliest path from question n to the end
	for n := len(qs); n >= 1; n-- {
		q := &qs[n-1]
		next := best[n+1]
		if n == len(qs) {
			next = 0
		}
		if b := q.Branching; b != nil && b.NextQuestion > n && b.NextQuestion <= len(qs) && best[b.NextQuestion] > next {
			next = best[b.NextQuestion]
		}
		best[n] = cost(n) + next
	}
	return best[1]
}

// ByNumber returns question n of qs, nil when there is none.
func ByNumber(qs []Question, n int) *Question {
	if n < 1 || n > len(qs) {
		return nil
	}
	return &qs[n-1]
}
