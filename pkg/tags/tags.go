// Package tags is the one rule for a contact tag, shared by contacts (which stores tags) and
// messaging (whose sign-up keywords name the tag a new subscriber gets), so a keyword can never
// name a tag that contacts would refuse.
package tags

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxLen is the most characters a tag may have.
const MaxLen = 64

// Check trims t and answers it with what is wrong with it ("" when nothing). Commas are refused
// because list filters take tags comma-separated.
func Check(t string) (tag, problem string) {
	t = strings.TrimSpace(t)
	switch {
	case t == "" || utf8.RuneCountInString(t) > MaxLen:
		return t, "each tag must be 1 to " + strconv.Itoa(MaxLen) + " characters"
	case strings.Contains(t, ","):
		return t, "tags cannot contain commas"
	}
	return t, ""
}
