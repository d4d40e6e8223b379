package server

import (
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/types/known/wrapperspb"

	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
	"github.com/chorus-sms/chorus/services/contacts/internal/store"
)

// filterInput is a contact filter as sent, from list query parameters or a segment body, with
// the REST names of its fields for error messages.
type filterInput struct {
	search     string
	tags       []string
	tagsLogic  string
	isTextable *wrapperspb.BoolValue
	optedOut   *wrapperspb.BoolValue
	hasEmail   *wrapperspb.BoolValue
	hasPhone   *wrapperspb.BoolValue
	states     []string
	zip        string

	prefix      string // "" for query parameters, "filter." in a segment body
	statesField string // "state" as a query parameter, "states" in a segment body
}

// filter validates in with the same rules wherever a filter comes from.
func (v *validator) filter(in filterInput) store.Filter {
	f := store.Filter{Search: strings.TrimSpace(in.search), Zip: strings.TrimSpace(in.zip)}
	if utf8.RuneCountInString(f.Search) > store.MaxSearchLen {
		v.fields.Add(in.prefix+"search", "at most 200 characters")
	} else if len(store.ParseSearch(f.Search)) > store.MaxSearchTerms {
		v.fields.Add(in.prefix+"search", "at most 8 words")
	}
	if len(in.tags) > 0 {
		f.Tags = v.tags(in.prefix+"tags", in.tags)
	}
	switch strings.ToUpper(strings.TrimSpace(in.tagsLogic)) {
	case "", store.TagsAny:
		f.TagsLogic = store.TagsAny
	case store.TagsAll:
		f.TagsLogic = store.TagsAll
	default:
		v.fields.Add(in.prefix+"tagsLogic", "must be OR or AND")
	}
	f.IsTextable, f.OptedOut = boolPtr(in.isTextable), boolPtr(in.optedOut)
	f.HasEmail, f.HasPhone = boolPtr(in.hasEmail), boolPtr(in.hasPhone)
	for _, s := range in.states {
		code, ok := stateCode(s)
		if !ok {
			v.fields.Add(in.prefix+in.statesField, "must be two-letter US state codes such as CA,NY")
			break
		}
		f.States = append(f.States, code)
	}
	v.zip(in.prefix+"zip", &f.Zip)
	return f
}

// listFilterInput reads the ad-hoc filter of GET /api/contacts, whose lists are comma-separated.
func listFilterInput(req *contactsv1.ListContactsRequest) filterInput {
	return filterInput{
		search: req.GetSearch(), tags: splitList(req.GetTags()), tagsLogic: req.GetTagsLogic(),
		isTextable: req.GetIsTextable(), optedOut: req.GetOptedOut(), hasEmail: req.GetHasEmail(),
		hasPhone: req.GetHasPhone(), states: splitList(req.GetState()), zip: req.GetZip(),
		statesField: "state",
	}
}

// segmentFilterInput reads a segment body's filter.
func segmentFilterInput(f *contactsv1.ContactFilter) filterInput {
	return filterInput{
		search: f.GetSearch(), tags: f.GetTags(), tagsLogic: f.GetTagsLogic(),
		isTextable: f.GetIsTextable(), optedOut: f.GetOptedOut(), hasEmail: f.GetHasEmail(),
		hasPhone: f.GetHasPhone(), states: f.GetStates(), zip: f.GetZip(),
		prefix: "filter.", statesField: "states",
	}
}

// splitList splits a comma-separated parameter, dropping empty items ("a,,b", a trailing comma).
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

func boolPtr(b *wrapperspb.BoolValue) *bool {
	if b == nil {
		return nil
	}
	v := b.GetValue()
	return &v
}
