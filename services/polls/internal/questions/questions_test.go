package questions_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/services/polls/internal/questions"
)

func mc(n int, code string, opts ...string) questions.Question {
	q := questions.Question{Number: n, Text: "Question?", Type: questions.MultipleChoice, ResponseCode: code}
	for i := 0; i+1 < len(opts); i += 2 {
		q.Options = append(q.Options, questions.Option{Code: opts[i], Label: opts[i+1]})
	}
	return q
}

func open(n int, code string) questions.Question {
	return questions.Question{Number: n, Text: "Tell us more", Type: questions.OpenEnded, ResponseCode: code}
}

// Each rule of issue 12 names the offending field; a valid poll has no problem.
func TestValidate(t *testing.T) {
	t.Parallel()
	valid := func() []questions.Question {
		q1 := mc(1, "color", "A", "Red", "B", "Blue")
		q1.Branching = &questions.Branching{Condition: "b", NextQuestion: 3}
		return []questions.Question{q1, open(2, "why"), mc(3, "size", "S", "Small", "L", "Large")}
	}
	cases := map[string]struct {
		change func([]questions.Question) []questions.Question
		fields []string
	}{
		"valid":          {func(q []questions.Question) []questions.Question { return q }, nil},
		"no questions":   {func([]questions.Question) []questions.Question { return nil }, []string{"questions"}},
		"21 questions":   {func([]questions.Question) []questions.Question { return make([]questions.Question, 21) }, []string{"questions"}},
		"gap in numbers": {func(q []questions.Question) []questions.Question { q[2].Number = 4; return q }, []string{"questions[2].questionNumber"}},
		"unknown type":   {func(q []questions.Question) []questions.Question { q[1].Type = "rating"; return q }, []string{"questions[1].type"}},
		"one option":     {func(q []questions.Question) []questions.Question { q[2].Options = q[2].Options[:1]; return q }, []string{"questions[2].options"}},
		"ten options": {func(q []questions.Question) []questions.Question {
			q[2].Options = make([]questions.Option, 10)
			return q
		}, []string{"questions[2].options"}},
		"empty code":     {func(q []questions.Question) []questions.Question { q[2].Options[1].Code = " "; return q }, []string{"questions[2].options[1].code"}},
		"duplicate code": {func(q []questions.Question) []questions.Question { q[2].Options[1].Code = "s"; return q }, []string{"questions[2].options[1].code"}},
		"missing label":  {func(q []questions.Question) []questions.Question { q[2].Options[0].Label = ""; return q }, []string{"questions[2].options[0].label"}},
		"keyword code": {func(q []questions.Question) []questions.Question { q[2].Options[1].Code = " stop "; return q },
			[]string{"questions[2].options[1].code"}},
		"keyword code spelled apart": {func(q []questions.Question) []questions.Question { q[2].Options[0].Code = "Opt-Out"; return q },
			[]string{"questions[2].options[0].code"}},
		"keyword label": {func(q []questions.Question) []questions.Question { q[2].Options[1].Label = "HELP"; return q },
			[]string{"questions[2].options[1].label"}},
		"duplicate label": {func(q []questions.Question) []questions.Question { q[2].Options[1].Label = " SMALL"; return q },
			[]string{"questions[2].options[1].label"}},
		"long label": {func(q []questions.Question) []questions.Question {
			q[2].Options[0].Label = strings.Repeat("x", 101)
			return q
		},
			[]string{"questions[2].options[0].label"}},
		"words holding a keyword": {func(q []questions.Question) []questions.Question {
			q[2].Options = []questions.Option{{Code: "STOPS", Label: "Stop by"}, {Code: "ends", Label: "Ending soon"}}
			return q
		}, nil},
		"open with option": {func(q []questions.Question) []questions.Question { q[1].Options = q[0].Options; return q }, []string{"questions[1].options"}},
		"no responseCode":  {func(q []questions.Question) []questions.Question { q[1].ResponseCode = ""; return q }, []string{"questions[1].responseCode"}},
		"same responseCode": {func(q []questions.Question) []questions.Question { q[2].ResponseCode = "COLOR"; return q },
			[]string{"questions[2].responseCode"}},
		"no text": {func(q []questions.Question) []questions.Question { q[0].Text = " "; return q }, []string{"questions[0].text"}},
		"condition not a code": {func(q []questions.Question) []questions.Question { q[0].Branching.Condition = "C"; return q },
			[]string{"questions[0].branchingLogic.condition"}},
		"branch backwards": {func(q []questions.Question) []questions.Question {
			q[2].Branching = &questions.Branching{Condition: "S", NextQuestion: 1}
			return q
		}, []string{"questions[2].branchingLogic.nextQuestion"}},
		"branch past the end": {func(q []questions.Question) []questions.Question { q[0].Branching.NextQuestion = 4; return q },
			[]string{"questions[0].branchingLogic.nextQuestion"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := apierr.Fields{}
			questions.Validate(c.change(valid()), f)
			got := []string{}
			for k := range f {
				got = append(got, k)
			}
			if c.fields == nil {
				assert.Empty(t, got)
				return
			}
			for _, want := range c.fields {
				assert.Contains(t, got, want)
			}
		})
	}
}

// A multiple_choice reply matches an option's code, trimmed and case-insensitive; anything
// else does not, an option's label included; an open_ended question takes any non-blank text.
func TestMatch(t *testing.T) {
	t.Parallel()
	q := mc(1, "color", "A", "Red", "B", "Light blue")
	for reply, want := range map[string]string{"a": "A", " B ": "B", "b\n": "B"} {
		code, ok := q.Match(reply)
		assert.True(t, ok, reply)
		assert.Equal(t, want, code, reply)
	}
	for _, reply := range []string{"", "  ", "C", "ab", "A please", "blue", "red", "LIGHT   BLUE"} {
		_, ok := q.Match(reply)
		assert.False(t, ok, reply)
	}
	o := open(2, "why")
	code, ok := o.Match("Because it's nice")
	assert.True(t, ok)
	assert.Empty(t, code)
	_, ok = o.Match(" \n")
	assert.False(t, ok)
}

// Branching jumps when the code equals the condition, else the next question; the last
// question ends the path.
func TestNext(t *testing.T) {
	t.Parallel()
	q := mc(1, "color", "A", "Red", "B", "Blue")
	q.Branching = &questions.Branching{Condition: "b", NextQuestion: 4}
	assert.Equal(t, 4, q.Next("B", 5))
	assert.Equal(t, 2, q.Next("A", 5))
	last := open(5, "why")
	assert.Equal(t, 0, last.Next("", 5))
}

// The hold covers the costliest path: a branch that skips expensive questions does not lower
// it, one that skips cheap ones to reach an expensive one raises nothing beyond the path.
func TestLongestPath(t *testing.T) {
	t.Parallel()
	q1 := mc(1, "a", "A", "a", "B", "b")
	q1.Branching = &questions.Branching{Condition: "B", NextQuestion: 4}
	qs := []questions.Question{q1, open(2, "b"), open(3, "c"), open(4, "d")}
	cost := map[int]int32{1: 1, 2: 5, 3: 5, 4: 1}
	assert.Equal(t, int32(12), questions.LongestPath(qs, func(n int) int32 { return cost[n] }))
	cost[2], cost[3] = 1, 1
	assert.Equal(t, int32(4), questions.LongestPath(qs, func(n int) int32 { return cost[n] }))
}

func TestReaskText(t *testing.T) {
	t.Parallel()
	q := mc(1, "c", "A", "Red", "B", "Blue", "C", "Green")
	assert.Equal(t, "Please reply A, B or C. Question?", q.ReaskText())
}

// The parser never panics and agrees with itself: a matched code is one of the question's, and
// the reply's normalized form matches the same way.
func FuzzMatch(f *testing.F) {
	for _, seed := range []string{"a", " B ", "Light blue", "", "\u00a0A", "ÄB", "1", "stop"} {
		f.Add(seed)
	}
	q := mc(1, "color", "A", "Red", "B", "Light blue", "1", "One")
	f.Fuzz(func(t *testing.T, reply string) {
		code, ok := q.Match(reply)
		if !ok {
			assert.Empty(t, code)
			return
		}
		assert.Contains(t, q.Codes(), code)
		again, ok2 := q.Match(questions.Normalize(reply))
		assert.True(t, ok2)
		assert.Equal(t, code, again)
	})
}
