package textlinks

import (
	"fmt"
	"strings"
)

// MaxURLBytes is the longest address a short link stands for: Find leaves longer ones as
// written (no phone needs more, and it bounds what one link row holds).
const MaxURLBytes = 8192

// Rewrite replaces every address Find reports with shorten(span.URL). Text outside the
// addresses is kept byte for byte.
func Rewrite(text string, shorten func(url string) (string, error)) (string, error) {
	spans := Find(text)
	if len(spans) == 0 {
		return text, nil
	}
	var b strings.Builder
	prev := 0
	for _, s := range spans {
		short, err := shorten(s.URL)
		if err != nil {
			return "", fmt.Errorf("shorten %s: %w", s.URL, err)
		}
		b.WriteString(text[prev:s.Start])
		b.WriteString(short)
		prev = s.End
	}
	b.WriteString(text[prev:])
	return b.String(), nil
}
