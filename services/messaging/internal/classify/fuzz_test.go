package classify

import (
	"strings"
	"testing"
)

var categories = map[string]bool{
	CategoryOptOut: true, CategoryOptIn: true, CategoryHelp: true, CategoryQuestion: true,
	CategoryAffirmative: true, CategoryNegative: true, CategoryOther: true,
}

func FuzzClassify(f *testing.F) {
	for _, s := range []string{
		"STOP", " Stop! ", "opt-out", "ＳＴＯＰ", "stop it", "yes", "No thanks", "who is this?",
		"I hate this!!!", "👍🏽", "", "\xff\xfe", "ſtop", "STOP\u0345", "e\u0301",
		"please stop texting me", "don't stop", "bórrenme de la lista", "¿cómo me doy de baja?",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		r := Classify(text)
		if r.Score < -1 || r.Score > 1 {
			t.Fatalf("Classify(%q).Score = %v, outside [-1, 1]", text, r.Score)
		}
		if !categories[r.Category] {
			t.Fatalf("Classify(%q).Category = %q", text, r.Category)
		}
		if (r.Keyword == KeywordNone) != (r.Word == "") {
			t.Fatalf("Classify(%q) keyword %v with word %q", text, r.Keyword, r.Word)
		}
		if (r.Revocation == RevocationNone) != (r.Rule == "") || (r.Keyword != KeywordNone && r.Rule != "") {
			t.Fatalf("Classify(%q) revocation %v with rule %q and keyword %v", text, r.Revocation, r.Rule, r.Keyword)
		}
		if r.OptsOut() != (r.Category == CategoryOptOut) || (r.Revocation == RevocationLow && !(r.RequiresResponse && r.OptOutDetected)) {
			t.Fatalf("Classify(%q) = %+v: an opt-out is categorized opt_out, a doubtful one goes to a person", text, r)
		}
		conf, rule := DetectRevocation(text)
		for _, variant := range []string{"  " + text + " ", "!" + text + " .", strings.ToLower(text)} {
			if c, ru := DetectRevocation(variant); c != conf || ru != rule {
				t.Fatalf("DetectRevocation(%q) = %v %q, but DetectRevocation(%q) = %v %q", text, conf, rule, variant, c, ru)
			}
		}
		kind, word := DetectKeyword(text)
		for _, variant := range []string{
			"  " + text + " ", "!" + text + "?!.", "\"" + text + "\"",
			strings.ToUpper(text), strings.ToLower(text),
		} {
			k, w := DetectKeyword(variant)
			if k != kind || w != word {
				t.Fatalf("DetectKeyword(%q) = %v %q, but DetectKeyword(%q) = %v %q",
					text, kind, word, variant, k, w)
			}
		}
	})
}
