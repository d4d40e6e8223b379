package server

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
	"github.com/chorus-sms/chorus/services/contacts/internal/store"
)

// FuzzListFilter feeds arbitrary query parameters to the list filter parser: it must never
// panic, and what it accepts must be what the SQL expects: trimmed, unique, comma-free tags,
// real upper-case state codes, an explicit tag logic and a bounded search.
func FuzzListFilter(f *testing.F) {
	f.Add("Jonathan smith", "a,b", "AND", "ca,NY", "94110")
	f.Add("(202) 555-0143", " a , ,a,", "or", "dc", "94110-1234")
	f.Add("", ",,,", "", ",", "")
	f.Add("x y z", "tag,with space", "xor", "ZZ", "1234")
	f.Fuzz(func(t *testing.T, search, tags, logic, states, zip string) {
		v := newValidator()
		flt := v.filter(listFilterInput(&contactsv1.ListContactsRequest{
			Search: search, Tags: tags, TagsLogic: logic, State: states, Zip: zip,
		}))
		if v.err() != nil {
			return
		}
		if flt.TagsLogic != store.TagsAny && flt.TagsLogic != store.TagsAll {
			t.Fatalf("tag logic %q accepted", flt.TagsLogic)
		}
		for i, tag := range flt.Tags {
			if tag == "" || tag != strings.TrimSpace(tag) || strings.Contains(tag, ",") || slices.Contains(flt.Tags[:i], tag) {
				t.Fatalf("tag %q accepted from %q", tag, tags)
			}
		}
		for _, s := range flt.States {
			if !usStates[s] {
				t.Fatalf("state %q accepted from %q", s, states)
			}
		}
		if utf8.RuneCountInString(flt.Search) > store.MaxSearchLen || len(store.ParseSearch(flt.Search)) > store.MaxSearchTerms {
			t.Fatalf("search %q accepted", flt.Search)
		}
		if flt.Zip != "" && !zipCode.MatchString(flt.Zip) {
			t.Fatalf("zip %q accepted", flt.Zip)
		}
	})
}
