// Package csvguard keeps a text written to a CSV export from running as a spreadsheet formula
// (OWASP's CSV injection advice): every export's user-supplied cells go through Cell.
package csvguard

import (
	"unicode"
	"unicode/utf8"
)

// Cell is s with a single quote before it when its first character could start a formula: =,
// +, - or @, in their ASCII, fullwidth or small forms or as the minus sign (spreadsheets fold
// these to ASCII); a control character such as a tab or carriage return; or an invisible
// character (Unicode Cf, such as U+200B, U+FEFF, U+202E, or a space of Zs), which a spreadsheet
// may drop or a reader not see before a formula. Any other text is returned unchanged.
func Cell(s string) string {
	r, _ := utf8.DecodeRuneInString(s)
	switch {
	case s == "":
		return s
	case formulaStart(r), unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zs):
		return "'" + s
	}
	return s
}

func formulaStart(r rune) bool {
	switch r {
	case '=', '+', '-', '@',
		'\uFF1D', '\uFF0B', '\uFF0D', '\uFF20', // fullwidth forms
		'\uFE66', '\uFE62', '\uFE63', '\uFE6B', // small forms
		'\u2212': // minus sign
		return true
	}
	return false
}
