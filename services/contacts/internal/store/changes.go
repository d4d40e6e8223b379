package store

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Per-contact limits of the spec. Every write keeps them, a merge included: the merged result
// is checked under the row lock the merge holds, so concurrent merges cannot add up past them.
const (
	MaxTags         = 50
	MaxCustomFields = 20
)

// Overflow is one per-contact limit a merge would exceed: the API field, what it counts, the
// limit and the count the merge would leave.
type Overflow struct {
	Field, Noun string
	Max, Would  int
}

// LimitError is returned when a merge would leave a contact over one or more limits; nothing
// is written.
type LimitError struct{ Over []Overflow }

func (e *LimitError) Error() string {
	parts := make([]string, len(e.Over))
	for i, o := range e.Over {
		parts[i] = fmt.Sprintf("%d %s (at most %d)", o.Would, o.Noun, o.Max)
	}
	return "merge would make " + strings.Join(parts, " and ")
}

// Changes are validated contact fields from a create or an update. A nil field was not sent.
// Tags and CustomFields are nil when not sent; when sent they are non-nil, even if empty.
type Changes struct {
	Phone        *string // E.164; "" removes the phone (update only)
	Email        *string // "" removes the email (update only)
	FirstName    *string
	LastName     *string
	Address      *string
	City         *string
	State        *string
	Zip          *string
	Timezone     *string
	Tags         []string
	CustomFields map[string]any
	IsStarred    *bool
	IsArchived   *bool
}

// setScalars copies the sent single-valued fields onto c and reports whether the phone changed;
// a new phone resets textability until its lookup completes.
func (ch Changes) setScalars(c *Contact) (phoneChanged bool) {
	if ch.Phone != nil && !holds(c.Phone, *ch.Phone) {
		c.Phone = nilIfEmpty(*ch.Phone)
		c.IsTextable = nil
		phoneChanged = true
	}
	if ch.Email != nil {
		c.Email = nilIfEmpty(*ch.Email)
	}
	for _, f := range []struct {
		from *string
		to   *string
	}{
		{ch.FirstName, &c.FirstName}, {ch.LastName, &c.LastName}, {ch.Address, &c.Address},
		{ch.City, &c.City}, {ch.State, &c.State}, {ch.Zip, &c.Zip}, {ch.Timezone, &c.Timezone},
	} {
		if f.from != nil {
			*f.to = *f.from
		}
	}
	if ch.IsStarred != nil {
		c.IsStarred = *ch.IsStarred
	}
	if ch.IsArchived != nil {
		c.IsArchived = *ch.IsArchived
	}
	return phoneChanged
}

// mergeInto applies a create's fields to an existing contact: sent fields win, tags are
// unioned (existing order first) and custom fields merged key by key, sent keys winning. A
// result that grows past MaxTags or MaxCustomFields is a *LimitError and leaves c unchanged.
func (ch Changes) mergeInto(c *Contact) (phoneChanged bool, err error) {
	fields := make(map[string]any, len(c.CustomFields)+len(ch.CustomFields))
	for k, v := range c.CustomFields {
		fields[k] = v
	}
	for k, v := range ch.CustomFields {
		fields[k] = v
	}
	tags := slices.Clip(c.Tags)
	for _, t := range ch.Tags {
		if !slices.Contains(tags, t) {
			tags = append(tags, t)
		}
	}
	// Only a merge that adds past a limit is refused: a contact already over one (stored before
	// merges were checked) can still be merged into without growing further.
	var over []Overflow
	if len(tags) > MaxTags && len(tags) > len(c.Tags) {
		over = append(over, Overflow{Field: "tags", Noun: "tags", Max: MaxTags, Would: len(tags)})
	}
	if len(fields) > MaxCustomFields && len(fields) > len(c.CustomFields) {
		over = append(over, Overflow{Field: "customFields", Noun: "custom fields", Max: MaxCustomFields, Would: len(fields)})
	}
	if over != nil {
		return false, &LimitError{Over: over}
	}
	c.CustomFields, c.Tags = fields, tags
	return ch.setScalars(c), nil
}

// replaceInto applies an update's fields: tags and custom fields, when sent, replace the whole
// list or object.
func (ch Changes) replaceInto(c *Contact) (phoneChanged bool) {
	if ch.Tags != nil {
		c.Tags = ch.Tags
	}
	if ch.CustomFields != nil {
		c.CustomFields = ch.CustomFields
	}
	return ch.setScalars(c)
}

// newContact is the row a create inserts when nothing matches.
func (ch Changes) newContact() Contact {
	c := Contact{Tags: []string{}, CustomFields: map[string]any{}, IsOptedIn: true}
	ch.replaceInto(&c)
	return c
}

// sameContent reports whether a and b hold the same writable fields (mergeInto's result
// against the row it started from).
func sameContent(a, b Contact) bool {
	return holds(a.Phone, deref(b.Phone)) && holds(a.Email, deref(b.Email)) &&
		a.FirstName == b.FirstName && a.LastName == b.LastName && a.Address == b.Address &&
		a.City == b.City && a.State == b.State && a.Zip == b.Zip && a.Timezone == b.Timezone &&
		a.IsStarred == b.IsStarred && a.IsArchived == b.IsArchived &&
		slices.Equal(a.Tags, b.Tags) && maps.Equal(a.CustomFields, b.CustomFields)
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// holds reports whether p holds s, a nil p holding "".
func holds(p *string, s string) bool { return p != nil && *p == s || p == nil && s == "" }

func nilIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
