package store

import (
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/chorus-sms/chorus/pkg/sqllike"
)

// Tag logics of a Filter.
const (
	TagsAny = "OR"
	TagsAll = "AND"
)

// Filter is a validated contact filter: the list's ad-hoc query parameters, or a segment's
// saved filter (stored as this JSON). Zero fields do not filter.
type Filter struct {
	Search     string   `json:"search,omitempty"`
	Tags       []string `json:"tags,omitempty"`
	TagsLogic  string   `json:"tagsLogic,omitempty"` // TagsAny (default) or TagsAll
	IsTextable *bool    `json:"isTextable,omitempty"`
	OptedOut   *bool    `json:"optedOut,omitempty"`
	HasEmail   *bool    `json:"hasEmail,omitempty"`
	HasPhone   *bool    `json:"hasPhone,omitempty"`
	States     []string `json:"states,omitempty"`
	Zip        string   `json:"zip,omitempty"`
}

// query accumulates a WHERE clause from constant SQL fragments and positional arguments; no
// input is ever written into the SQL text.
type query struct {
	conds []string
	args  []any
}

// arg binds v and returns its placeholder.
func (q *query) arg(v any) string {
	q.args = append(q.args, v)
	return "$" + strconv.Itoa(len(q.args))
}

func (q *query) where(cond string) { q.conds = append(q.conds, cond) }

func (q *query) sql() string { return strings.Join(q.conds, " AND ") }

// newQuery starts a query scoped to org and filtered by f. Every condition is one that the
// organization-leading indexes serve: trigram GIN for search, GIN for tags.
func newQuery(org uuid.UUID, f Filter) *query {
	q := &query{}
	q.where("organization_id = " + q.arg(org))
	for _, t := range ParseSearch(f.Search) {
		like := q.arg(sqllike.Contains(t.Text))
		if t.Fuzzy {
			q.where("(search_text ILIKE " + like + ` ESCAPE '\' OR ` + q.arg(t.Text) + " <% name_text)")
		} else {
			q.where("search_text ILIKE " + like + ` ESCAPE '\'`)
		}
	}
	if len(f.Tags) > 0 {
		if f.TagsLogic == TagsAll {
			q.where("tags @> " + q.arg(f.Tags))
		} else {
			q.where("tags && " + q.arg(f.Tags))
		}
	}
	if f.IsTextable != nil {
		q.where("is_textable = " + q.arg(*f.IsTextable))
	}
	if f.OptedOut != nil {
		q.where(pick(*f.OptedOut, "NOT is_opted_in", "is_opted_in"))
	}
	if f.HasEmail != nil {
		q.where(pick(*f.HasEmail, "email IS NOT NULL", "email IS NULL"))
	}
	if f.HasPhone != nil {
		q.where(pick(*f.HasPhone, "phone IS NOT NULL", "phone IS NULL"))
	}
	if len(f.States) > 0 {
		q.where("state = ANY(" + q.arg(f.States) + ")")
	}
	if f.Zip != "" {
		q.where("zip = " + q.arg(f.Zip))
	}
	return q
}

// narrowsByIndex reports whether f has a condition that an index finds its rows by (search
// terms, tags, having a phone or an email). Those may match a few contacts of many, which that
// index finds and a sort orders faster than a walk in the list's order; the planner chooses.
func (f Filter) narrowsByIndex() bool {
	return len(ParseSearch(f.Search)) > 0 || len(f.Tags) > 0 ||
		f.HasEmail != nil && *f.HasEmail || f.HasPhone != nil && *f.HasPhone
}

func pick(b bool, yes, no string) string {
	if b {
		return yes
	}
	return no
}
