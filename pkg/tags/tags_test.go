package tags

import (
	"strings"
	"testing"
)

// A tag is trimmed; empty, over-long and comma-holding tags are refused with the reason.
func TestCheck(t *testing.T) {
	for in, want := range map[string]struct{ tag, problem string }{
		"  vip ":                {"vip", ""},
		"":                      {"", "each tag must be 1 to 64 characters"},
		strings.Repeat("é", 64): {strings.Repeat("é", 64), ""},
		strings.Repeat("a", 65): {strings.Repeat("a", 65), "each tag must be 1 to 64 characters"},
		"a,b":                   {"a,b", "tags cannot contain commas"},
	} {
		tag, problem := Check(in)
		if tag != want.tag || problem != want.problem {
			t.Errorf("Check(%q) = %q, %q; want %q, %q", in, tag, problem, want.tag, want.problem)
		}
	}
}
