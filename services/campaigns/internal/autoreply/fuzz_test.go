package autoreply

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// Any text, valid UTF-8 or not, gets an answer or none without panicking, the same one each
// time, and only among the campaign's own answers; a question always matches itself when it
// has topic words.
func FuzzChoose(f *testing.F) {
	for _, s := range []string{"yes", "What time does the show start?", "¿Dónde?", "\xff\xfe", "", "is parking free??", "ｗｈａｔ　ｔｉｍｅ"} {
		f.Add("question", s, "Where can I park?")
	}
	f.Fuzz(func(t *testing.T, category, text, question string) {
		r := Rules{Yes: "Y", No: "N", FAQ: []FAQ{{Question: question, Answer: "A0"}, {Question: "What time does it start?", Answer: "A1"}}}
		a, ok := Choose(r, category, text)
		b, ok2 := Choose(r, category, text)
		if a != b || ok != ok2 {
			t.Fatalf("Choose is not deterministic: %v %v, %v %v", a, ok, b, ok2)
		}
		if ok && a.Body != "Y" && a.Body != "N" && !strings.HasPrefix(a.Body, "A") {
			t.Fatalf("answer %q is not the campaign's", a.Body)
		}
		if utf8.ValidString(question) && len(contentWords(question)) > 0 {
			if i := Match([]string{question}, question); i != 0 {
				t.Fatalf("%q does not match itself", question)
			}
		}
	})
}
