package audience

import (
	"testing"

	"github.com/chorus-sms/chorus/pkg/apierr"
)

// A filter must name its contacts: tags, or all without tags; nothing is read as everyone.
func TestParseRefusesAFilterNamingNobody(t *testing.T) {
	cases := []struct {
		tags  []string
		logic string
		all   bool
		field string // "" when accepted
	}{
		{nil, "", false, "contactFilter"},
		{[]string{}, "AND", false, "contactFilter"},
		{[]string{""}, "", false, "contactFilter.tags"}, // the bad tag is named, not the filter
		{[]string{"vip"}, "", true, "contactFilter.all"},
		{[]string{"vip"}, "", false, ""},
		{nil, "", true, ""},
	}
	for _, c := range cases {
		f := apierr.Fields{}
		got := Parse(f, "contactFilter", c.tags, c.logic, c.all)
		if c.field == "" {
			if len(f) != 0 {
				t.Errorf("%+v: refused %v", c, f)
			}
			if got.All != c.all {
				t.Errorf("%+v: all %v", c, got.All)
			}
			continue
		}
		if _, ok := f[c.field]; !ok || len(f) != 1 {
			t.Errorf("%+v: want only %s, got %v", c, c.field, f)
		}
	}
	f := apierr.Fields{}
	Check(f, "contactFilter", &Filter{Tags: []string{}, TagsLogic: LogicOr})
	if f["contactFilter"] != NamesNobody {
		t.Errorf("a stored empty filter passes Check: %v", f)
	}
	if AllField(&Filter{Tags: []string{"a"}}) != nil || !*AllField(&Filter{All: true}) {
		t.Error("AllField")
	}
}
