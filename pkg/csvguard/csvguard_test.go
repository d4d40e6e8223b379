package csvguard_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/chorus-sms/chorus/pkg/csvguard"
)

func TestCell(t *testing.T) {
	for in, want := range map[string]string{
		"":                  "",
		"Spring":            "Spring",
		"Spring = sale":     "Spring = sale",
		"5% off":            "5% off",
		"été":               "été",
		"=SUM(A1)":          "'=SUM(A1)",
		"+1 offer":          "'+1 offer",
		"-5%":               "'-5%",
		"@sum":              "'@sum",
		"\t=1":              "'\t=1",
		"\r=1":              "'\r=1",
		"\n=1":              "'\n=1",
		"\uFF1DSUM(A1)":     "'\uFF1DSUM(A1)",  // fullwidth =
		"\uFF0B1":           "'\uFF0B1",        // fullwidth +
		"\uFF0D1":           "'\uFF0D1",        // fullwidth -
		"\uFF20sum":         "'\uFF20sum",      // fullwidth @
		"\uFE66SUM(A1)":     "'\uFE66SUM(A1)",  // small =
		"\u2212" + "1":      "'\u22121",        // minus sign
		"\u200B=SUM(A1)":    "'\u200B=SUM(A1)", // zero-width space (Cf)
		"\uFEFF=SUM(A1)":    "'\uFEFF=SUM(A1)", // byte order mark (Cf)
		"\u202E=SUM(A1)":    "'\u202E=SUM(A1)", // right-to-left override (Cf)
		"\u00A0=SUM(A1)":    "'\u00A0=SUM(A1)", // no-break space (Zs)
		"\u3000=SUM(A1)":    "'\u3000=SUM(A1)", // ideographic space (Zs)
		" =SUM(A1)":         "' =SUM(A1)",
		"\u200BSpring":      "'\u200BSpring", // invisible lead: guarded whatever follows
		"Spring\u200B=1":    "Spring\u200B=1",
		"'already quoted":   "'already quoted",
		"\xff=invalid utf8": "\xff=invalid utf8",
	} {
		assert.Equal(t, want, csvguard.Cell(in), "%q", in)
	}
}

func FuzzCell(f *testing.F) {
	f.Add("=1")
	f.Add("\u200B=1")
	f.Fuzz(func(t *testing.T, s string) {
		out := csvguard.Cell(s)
		if out != s && out != "'"+s {
			t.Fatalf("Cell(%q) = %q: only a leading quote may be added", s, out)
		}
		if csvguard.Cell(out) != out {
			t.Fatalf("Cell(%q) = %q is not guarded itself", s, out)
		}
	})
}
