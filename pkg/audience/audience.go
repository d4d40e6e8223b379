// Package audience is a bulk send's ad-hoc audience (a campaign's or a poll's contactFilter):
// its rules when a request gives one, its stored form, and the form contacts' StreamAudience
// takes, so campaigns and polls select contacts the same way.
package audience

import (
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/chorus-sms/chorus/pkg/apierr"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
)

// How a filter's tags combine.
const (
	LogicOr  = "OR" // the default
	LogicAnd = "AND"
)

// MaxTags bounds a filter's tags.
const MaxTags = 50

// Filter is a contactFilter as stored (JSON) and served.
type Filter struct {
	Tags      []string `json:"tags"`
	TagsLogic string   `json:"tagsLogic"`
	// All targets every contact: it must be said, since a filter without tags would
	// otherwise select everyone by accident.
	All bool `json:"all,omitempty"`
}

// NamesNobody is the message of a filter that selects no one by name.
const NamesNobody = `names no contacts: give tags, or {"all": true} to target every contact`

// Parse checks a request's contactFilter, adding its problems to f under field ("contactFilter"):
// tagsLogic AND or OR (any case; default OR), tags non-empty without commas (they are
// contacts' list separator), at most MaxTags once duplicates are dropped; and Check's rule
// (tags, or all without tags).
func Parse(f apierr.Fields, field string, tags []string, logic string, all bool) *Filter {
	out := &Filter{Tags: []string{}, TagsLogic: LogicOr, All: all}
	nf := len(f)
	switch l := strings.ToUpper(logic); l {
	case "":
	case LogicOr, LogicAnd:
		out.TagsLogic = l
	default:
		f.Add(field+".tagsLogic", "must be AND or OR")
	}
	seen := map[string]bool{}
	for _, t := range tags {
		t = strings.TrimSpace(t)
		if t == "" || strings.Contains(t, ",") {
			f.Add(field+".tags", "tags must be non-empty and contain no commas")
			continue
		}
		if !seen[t] {
			seen[t] = true
			out.Tags = append(out.Tags, t)
		}
	}
	if len(out.Tags) > MaxTags {
		f.Add(field+".tags", fmt.Sprintf("at most %d tags", MaxTags))
	}
	if len(f) == nf { // a bad tag is reported as such, not as a filter naming nobody
		Check(f, field, out)
	}
	return out
}

// AllField is the served all: present (true) only on a filter that targets everyone, so a
// tags filter reads back as it was given.
func AllField(flt *Filter) *bool {
	if !flt.All {
		return nil
	}
	all := true
	return &all
}

// Check adds to f what makes a stored or parsed filter unusable as an audience: none at all
// named (no tags and not all), or all together with tags (ambiguous). A nil filter is no
// filter (a segment is used) and passes.
func Check(f apierr.Fields, field string, flt *Filter) {
	switch {
	case flt == nil:
	case flt.All && len(flt.Tags) > 0:
		f.Add(field+".all", "all targets every contact: leave tags out")
	case !flt.All && len(flt.Tags) == 0:
		f.Add(field, NamesNobody)
	}
}

// Request is the StreamAudience request of a send's audience (segment, else filter), in
// batches of batch contacts, resuming after the contact after (uuid.Nil: from the start).
func Request(segment *uuid.UUID, filter *Filter, after uuid.UUID, batch int32) *contactsv1.StreamAudienceRequest {
	req := &contactsv1.StreamAudienceRequest{BatchSize: batch}
	if after != uuid.Nil {
		req.AfterContactId = after.String()
	}
	if segment != nil {
		req.SegmentId = segment.String()
	} else if filter != nil {
		req.Filter = filter.Proto()
	}
	return req
}

// Proto is the filter as contacts' StreamAudience takes it.
func (f *Filter) Proto() *contactsv1.ContactFilter {
	return &contactsv1.ContactFilter{Tags: f.Tags, TagsLogic: f.TagsLogic}
}
