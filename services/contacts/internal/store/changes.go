package store

import (
	"errors"
	"slices"
)

// MaxCustomFields is the spec's limit of custom fields per contact.
const MaxCustomFields = 20

// ErrTooManyCustomFields is returned when a merge would leave a contact with more than
// MaxCustomFields custom fields.
var ErrTooManyCustomFields = errors.New("too many custom fields")

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
// unioned (existing order first) and custom fields merged key by key, sent keys winning.
func (ch Changes) mergeInto(c *Contact) (phoneChanged bool, err error) {
	fields := make(map[string]any, len(c.CustomFields)+len(ch.CustomFields))
	for k, v := range c.CustomFields {
		fields[k] = v
	}
	for k, v := range ch.CustomFields {
		fields[k] = v
	}
	if len(fields) > MaxCustomFields {
		return false, ErrTooManyCustomFields
	}
	c.CustomFields = fields
	for _, t := range ch.Tags {
		if !slices.Contains(c.Tags, t) {
			c.Tags = append(c.Tags, t)
		}
	}
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

// holds reports whether p holds s, a nil p holding "".
func holds(p *string, s string) bool { return p != nil && *p == s || p == nil && s == "" }

func nilIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
