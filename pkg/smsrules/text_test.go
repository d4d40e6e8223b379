package smsrules

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestNormalize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"plain ASCII untouched", "Hi Ann, 50% off! Reply STOP to opt out.",
			"Hi Ann, 50% off! Reply STOP to opt out."},
		{"single smart quotes", "‘Don’t’ ‚low‛", "'Don't' 'low'"},
		{"double smart quotes", "“Sale” „now‟ «ici»", `"Sale" "now" "ici"`},
		{"dashes", "9–5 — closed ― x − y", "9-5 - closed - x - y"},
		{"ellipsis", "Wait…", "Wait..."},
		{"unicode spaces", "a\u00A0b\u2003c\u202Fd\u3000e", "a b c d e"},
		{"zero-width removed", "pro\u200Bmo\u200Ccode\uFEFF\u2060 soft\u00ADhyphen",
			"promocode softhyphen"},
		{"accented Latin", "Café Señor Müller Ærø façade", "Cafe Senor Muller AEro facade"},
		{"sharp s", "Straße", "Strasse"},
		{"decomposed accents", "Cafe\u0301 x\u0301", "Cafe x"},
		{"compatibility forms", "ﬁne Ｈｉ ２ ™ ①", "fine Hi 2 TM 1"},
		{"acute accent as apostrophe", "don´t", "don't"},
		{"line separator", "a\u2028b", "a\nb"},
		{"emoji kept", "Thanks 🙏🏽 see you 🎉", "Thanks 🙏🏽 see you 🎉"},
		{"emoji sequence keeps its joiner", "👩\u200D💻 and ❤️", "👩\u200D💻 and ❤️"},
		{"stray joiner removed", "a\u200Db", "ab"},
		{"CJK kept, full-width punctuation folded", "你好，世界！", "你好,世界!"},
		{"Cyrillic and Greek kept", "Привет αβγ", "Привет αβγ"},
		{"Hangul kept composed", "안녕하세요", "안녕하세요"},
		{"fraction without ASCII form kept", "½ price", "½ price"},
		{"invalid UTF-8 replaced", "a\xffb", "a\uFFFDb"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Normalize(tt.in)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, got, Normalize(got), "idempotent")
		})
	}
}

func FuzzNormalize(f *testing.F) {
	for _, s := range []string{
		"“Hi” — it’s café time…", "👩\u200D💻", "a\u200D\u0301", "\u1100\u200B\u1161",
		"ø\u0301", "x\u0301\u0302", "Y\u0619\u0303", "क\u200D्ष", "\xff\xfe", "ǅ ﬃ ½ ¨",
		"😀\u200D\u200D😀", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Normalize(s)
		if !utf8.ValidString(got) {
			t.Fatalf("Normalize(%q) = %q, not valid UTF-8", s, got)
		}
		if again := Normalize(got); again != got {
			t.Fatalf("Normalize not idempotent: %q → %q → %q", s, got, again)
		}
		ascii := !strings.ContainsFunc(s, func(r rune) bool { return r >= utf8.RuneSelf })
		if ascii && got != s {
			t.Fatalf("Normalize changed ASCII text %q to %q", s, got)
		}
	})
}
