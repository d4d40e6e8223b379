// Package textlinks finds the web addresses in a message's text and swaps them for short
// links: messaging's replies and campaigns' texts read addresses by the same rule, so a
// recipient's link is shortened whichever path sent it.
//
// An address is recognised when it starts with http:// or https:// (any letter case) or with
// www., at the start of a word, and its host has at least one dot. Bare domains
// ("example.com") and email addresses ("ann@example.com") are left alone: in SMS text they
// are as often a sign-off or a typo as a link, and rewriting them would change what the
// sender wrote.
package textlinks

import (
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Span is one address in a text: text[Start:End] as written, and URL, the absolute address
// it stands for. The scheme is lower-cased and a www. address gets "https://" in front, as
// every phone's browser would open it.
type Span struct {
	Start, End int
	URL        string
}

// Find returns the addresses in text, in order and without overlaps; one longer than
// MaxURLBytes is left as written. An address ends at
// whitespace, a control character, invalid UTF-8 or one of < > "; then any trailing
// . , ; : ! ? or quote (ASCII, curly or full-width) is dropped, and so is a closing ) ] }
// with no opening partner inside the address. So "(see https://x.io/y)." yields
// "https://x.io/y" while "https://en.wikipedia.org/wiki/Foo_(bar)" is kept whole.
func Find(text string) []Span {
	var spans []Span
	for i := 0; i < len(text); {
		prefix := prefixAt(text, i)
		if prefix == "" {
			i++
			continue
		}
		end := i + trimTail(text[i:i+addressEnd(text[i:])])
		if abs, ok := absolute(text[i:end], prefix); ok {
			if len(abs) <= MaxURLBytes {
				spans = append(spans, Span{Start: i, End: end, URL: abs})
			}
			i = end
			continue
		}
		i += len(prefix)
	}
	return spans
}

var prefixes = []string{"https://", "http://", "www."}

// prefixAt returns the address prefix that text has at byte i at the start of a word, or "".
func prefixAt(text string, i int) string {
	if c := text[i] | 0x20; c != 'h' && c != 'w' { // every prefix starts with h or w, either case
		return ""
	}
	for _, p := range prefixes {
		if len(text)-i >= len(p) && strings.EqualFold(text[i:i+len(p)], p) {
			if prev, _ := utf8.DecodeLastRuneInString(text[:i]); i > 0 && joinsWord(prev) {
				return ""
			}
			return p
		}
	}
	return ""
}

// joinsWord reports whether r before a prefix makes it part of a longer word, address or
// email ("awww.", "ann@www.x.com", "xhttp://").
func joinsWord(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("@.-_/", r)
}

// addressEnd returns the length of the run of s that can belong to an address.
func addressEnd(s string) int {
	for i, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) || strings.ContainsRune(`<>"`, r) ||
			(r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD")) {
			return i
		}
	}
	return len(s)
}

var closers = map[byte]byte{')': '(', ']': '[', '}': '{'}

// trimTail returns the length of s without the sentence punctuation that follows an address.
func trimTail(s string) int {
	for s != "" {
		r, size := utf8.DecodeLastRuneInString(s)
		if open, ok := closers[s[len(s)-1]]; ok {
			if strings.Count(s, string(open)) >= strings.Count(s, s[len(s)-1:]) {
				break
			}
		} else if !strings.ContainsRune(".,;:!?'‘’“”。，、；：！？", r) {
			break
		}
		s = s[:len(s)-size]
	}
	return len(s)
}

// absolute returns the absolute URL for an address that starts with prefix, if its host is a
// dotted name (or IPv4 address) that net/url accepts.
func absolute(addr, prefix string) (string, bool) {
	if len(addr) <= len(prefix) {
		// Trimming ate into the prefix ("see www." at the end of a sentence).
		return "", false
	}
	abs := strings.ToLower(prefix) + addr[len(prefix):]
	if prefix == "www." {
		abs = "https://" + addr
	}
	u, err := url.Parse(abs)
	if err != nil || !dottedHost(u.Hostname()) {
		return "", false
	}
	return abs, true
}

// dottedHost reports whether host is two or more non-empty labels of letters, digits and
// hyphens.
func dottedHost(host string) bool {
	labels := strings.Split(host, ".")
	if len(labels) < 2 {
		return false
	}
	for _, l := range labels {
		if l == "" || strings.ContainsFunc(l, func(r rune) bool {
			return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-'
		}) {
			return false
		}
	}
	return true
}
