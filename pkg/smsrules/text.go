package smsrules

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// MaxTextLength is the most characters one outgoing text may have once it is final (merge
// fields filled in, normalized, links shortened). Replies were always capped at it; every
// other text (campaigns, their auto-replies and test copies, polls) is held to the same limit,
// so no recipient is sent a giant SMS billed by the dozen segments.
const MaxTextLength = 1600

// zeroWidthJoiner glues emoji into one picture (👨‍👩‍👧), so Normalize keeps it between two
// non-ASCII characters and drops it elsewhere.
const zeroWidthJoiner = '\u200D'

// replacements are characters whose ASCII form Unicode decomposition does not give.
var replacements = map[rune]string{
	'‘': "'", '’': "'", '‚': "'", '‛': "'", '′': "'", '‹': "'", '›': "'",
	'“': `"`, '”': `"`, '„': `"`, '‟': `"`, '″': `"`, '«': `"`, '»': `"`,
	'‐': "-", '‑': "-", '‒': "-", '–': "-", '—': "-", '―': "-", '−': "-",
	'…': "...", '´': "'",
	'ß': "ss", 'æ': "ae", 'Æ': "AE", 'œ': "oe", 'Œ': "OE", 'ø': "o", 'Ø': "O",
	'ł': "l", 'Ł': "L", 'đ': "d", 'Đ': "D", 'ð': "d", 'Ð': "D", 'þ': "th", 'Þ': "Th",
	'ı': "i",
	// Line and paragraph separators are line breaks; the next-line control is one too.
	'\u2028': "\n", '\u2029': "\n", '\u0085': "\n",
	// Invisible characters that only cost space in a message.
	'\u200B': "", '\u200C': "", '\u2060': "", '\uFEFF': "", '\u00AD': "", '\u180E': "",
}

// Normalize rewrites message text into the plain characters every handset and carrier
// renders: one curly quote or accented letter forces a whole SMS from GSM-7 into UCS-2, which
// cuts a segment from 160 to 70 characters and can double a campaign's cost. It replaces
// smart quotes, dashes, the ellipsis, Unicode spaces and accented Latin letters with their
// ASCII forms and removes zero-width characters. Characters with no ASCII form (emoji, CJK,
// Cyrillic, ...) are kept as they are, so the message is never destroyed. The result is
// valid UTF-8 (invalid bytes become U+FFFD), and Normalize(Normalize(s)) == Normalize(s).
func Normalize(s string) string {
	if isASCII(s) {
		return s // every step below leaves ASCII as it is; most texts are
	}
	runes := []rune(norm.NFC.String(strings.ToValidUTF8(s, "\uFFFD")))
	var b strings.Builder
	b.Grow(len(s))
	// last is the last character written other than a joiner; base is the last one that
	// starts a new letter (combining class 0), which decides whether an accent sits on an
	// ASCII letter.
	last, base := rune(-1), rune(-1)
	for i, r := range runes {
		out := fold(r)
		switch {
		case r == zeroWidthJoiner:
			if !joinsPictures(last, runes[i+1:]) {
				continue
			}
		case isLatinAccent(r) && base < utf8.RuneSelf && unicode.IsLetter(base):
			// An accent NFC could not compose onto an ASCII letter ("x\u0301").
			continue
		}
		b.WriteString(out)
		if out == "" || r == zeroWidthJoiner {
			continue
		}
		last, _ = utf8.DecodeLastRuneInString(out)
		if norm.NFC.PropertiesString(string(last)).CCC() == 0 {
			base = last
		}
	}
	// Removing a character can bring together two that compose (a Hangul lead and vowel
	// split by a zero-width space), so compose again. FuzzNormalize checks that a second
	// pass changes nothing.
	return norm.NFC.String(b.String())
}

// fold returns the replacement of one character.
func fold(r rune) string {
	if r < utf8.RuneSelf {
		return string(r)
	}
	if s, ok := replacements[r]; ok {
		return s
	}
	if unicode.Is(unicode.Zs, r) {
		return " "
	}
	// Compatibility decomposition without the accents gives é → e, ǿ → o, ﬁ → fi, Ａ → A,
	// ² → 2. Characters it leaves non-ASCII are kept, and so are spacing accents such as ¨,
	// which would decompose to a bare space.
	var b strings.Builder
	for _, d := range norm.NFKD.String(string(r)) {
		switch rep, ok := replacements[d]; {
		case unicode.Is(unicode.Mn, d):
		case ok:
			b.WriteString(rep)
		case d < utf8.RuneSelf:
			b.WriteRune(d)
		default:
			return string(r)
		}
	}
	if strings.TrimSpace(b.String()) == "" {
		return string(r)
	}
	return b.String()
}

// joinsPictures reports whether a zero-width joiner between last and the first of next sits
// between two non-ASCII characters that are not themselves joiners.
func joinsPictures(last rune, next []rune) bool {
	return last >= utf8.RuneSelf && len(next) > 0 && next[0] >= utf8.RuneSelf &&
		next[0] != zeroWidthJoiner && fold(next[0]) == string(next[0])
}

// isLatinAccent reports whether r is one of the combining accents used on Latin letters.
func isLatinAccent(r rune) bool {
	return (r >= 0x0300 && r <= 0x036F) || (r >= 0x1AB0 && r <= 0x1AFF) ||
		(r >= 0x1DC0 && r <= 0x1DFF) || (r >= 0xFE20 && r <= 0xFE2F)
}

// isASCII reports whether s is all ASCII.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
