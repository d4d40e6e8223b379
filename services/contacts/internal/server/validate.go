package server

import (
	"math"
	"net/mail"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/phone"
	"github.com/chorus-sms/chorus/pkg/tags"
	"github.com/chorus-sms/chorus/services/contacts/internal/store"
)

// Bounds of contact fields.
const (
	maxNameLen        = 100 // first name, last name, city
	maxAddressLen     = 200
	maxEmailLen       = 254 // RFC 5321 path limit
	maxCustomValueLen = 1000
)

var (
	// customFieldKey keeps keys usable as {{key}} merge fields.
	customFieldKey = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,63}$`)
	zipCode        = regexp.MustCompile(`^[0-9]{5}(-[0-9]{4})?$`)
)

// builtinMergeFields are the merge fields the spec defines; a custom field of the same name
// (in any case) would be ambiguous in message text.
var builtinMergeFields = map[string]bool{
	"firstname": true, "lastname": true, "email": true, "phone": true, "city": true, "state": true, "zip": true,
}

// validator collects every field failure of a request, so one answer names them all.
type validator struct{ fields apierr.Fields }

func newValidator() *validator { return &validator{fields: apierr.Fields{}} }

func (v *validator) err() error { return v.fields.Err() }

// phone normalizes a sent phone to E.164. "" removes the phone when clearable, else counts as
// not sent.
func (v *validator) phone(p *string, clearable bool) *string {
	if p == nil || *p == "" {
		return emptyOrNil(p, clearable)
	}
	e164, err := phone.Normalize(*p)
	if err != nil {
		v.fields.Add("phone", "must be a valid phone number, e.g. (202) 555-0143 or +12025550143")
		return nil
	}
	return &e164
}

// email checks a bare address (no display name); it is stored as given and matched
// case-insensitively.
func (v *validator) email(p *string, clearable bool) *string {
	if p == nil || strings.TrimSpace(*p) == "" {
		return emptyOrNil(p, clearable)
	}
	s := strings.TrimSpace(*p)
	addr, err := mail.ParseAddress(s)
	if err != nil || addr.Name != "" || addr.Address != s || len(s) > maxEmailLen {
		v.fields.Add("email", "must be an email address such as ada@example.com")
		return nil
	}
	return &s
}

// text trims a sent free-text field and bounds its length in characters.
func (v *validator) text(field string, p *string, max int) *string {
	if p == nil {
		return nil
	}
	s := strings.TrimSpace(*p)
	if utf8.RuneCountInString(s) > max {
		v.fields.Add(field, "at most "+strconv.Itoa(max)+" characters")
		return nil
	}
	return &s
}

// stateCode returns the upper-cased code when s is a real US state or territory code.
func stateCode(s string) (string, bool) {
	code := strings.ToUpper(strings.TrimSpace(s))
	return code, usStates[code]
}

func (v *validator) state(p *string) *string {
	if p == nil || *p == "" {
		return p
	}
	code, ok := stateCode(*p)
	if !ok {
		v.fields.Add("state", "must be a two-letter US state code such as NY")
		return nil
	}
	return &code
}

func (v *validator) zip(field string, p *string) *string {
	if p == nil {
		return nil
	}
	s := strings.TrimSpace(*p)
	if s != "" && !zipCode.MatchString(s) {
		v.fields.Add(field, "must be a US ZIP code such as 94110 or 94110-1234")
		return nil
	}
	return &s
}

func (v *validator) timezone(p *string) *string {
	if p == nil || *p == "" {
		return p
	}
	if _, err := time.LoadLocation(*p); err != nil || *p == "Local" {
		v.fields.Add("timezone", "must be an IANA timezone such as America/Chicago")
		return nil
	}
	return p
}

// tags trims, drops duplicates and bounds the list (each tag as pkg/tags has it). The result
// is non-nil: sent tags, even none, are a value.
func (v *validator) tags(field string, in []string) []string {
	out := make([]string, 0, len(in))
	seen := make(map[string]bool, len(in))
	for _, raw := range in {
		t, problem := tags.Check(raw)
		switch {
		case problem != "":
			v.fields.Add(field, problem)
			return nil
		case seen[t]:
			continue
		}
		seen[t] = true
		out = append(out, t)
	}
	if len(out) > store.MaxTags {
		v.fields.Add(field, "at most "+strconv.Itoa(store.MaxTags)+" tags")
		return nil
	}
	return out
}

// tagList reads an update's tags, a JSON list that must hold only strings.
func (v *validator) tagList(lv *structpb.ListValue) []string {
	if lv == nil {
		return nil
	}
	in := make([]string, 0, len(lv.GetValues()))
	for _, val := range lv.GetValues() {
		s, ok := val.GetKind().(*structpb.Value_StringValue)
		if !ok {
			v.fields.Add("tags", "must be a list of strings")
			return nil
		}
		in = append(in, s.StringValue)
	}
	return v.tags("tags", in)
}

// customFields checks a sent object: at most store.MaxCustomFields keys usable as merge
// fields (customValues), each a string, number or boolean. The result is nil only when nothing
// was sent.
func (v *validator) customFields(st *structpb.Struct) map[string]any {
	if st == nil {
		return nil
	}
	fields := st.GetFields()
	out := make(map[string]any, len(fields))
	for k, val := range fields {
		switch x := val.GetKind().(type) {
		case *structpb.Value_StringValue:
			out[k] = x.StringValue
		case *structpb.Value_NumberValue:
			if math.IsNaN(x.NumberValue) || math.IsInf(x.NumberValue, 0) {
				v.fields.Add("customFields", "numbers must be finite ("+k+")")
				return nil
			}
			out[k] = x.NumberValue
		case *structpb.Value_BoolValue:
			out[k] = x.BoolValue
		default:
			v.fields.Add("customFields", "values must be strings, numbers or booleans ("+k+")")
			return nil
		}
	}
	if !v.customValues(out) {
		return nil
	}
	return out
}

// customValues checks custom fields from a request or an import's row: how many, the keys,
// and the length of string values.
func (v *validator) customValues(fields map[string]any) bool {
	if len(fields) > store.MaxCustomFields {
		v.fields.Add("customFields", "at most "+strconv.Itoa(store.MaxCustomFields)+" custom fields")
		return false
	}
	for k, val := range fields {
		if !validCustomKey(k) {
			v.fields.Add("customFields", "keys must start with a letter, hold only letters, digits and _, be at most 64 long, and not be a built-in merge field ("+k+")")
			return false
		}
		if s, ok := val.(string); ok && utf8.RuneCountInString(s) > maxCustomValueLen {
			v.fields.Add("customFields", "values are at most "+strconv.Itoa(maxCustomValueLen)+" characters ("+k+")")
			return false
		}
	}
	return true
}

// validCustomKey reports whether k can name a custom field (a {{k}} merge field).
func validCustomKey(k string) bool {
	return customFieldKey.MatchString(k) && !builtinMergeFields[strings.ToLower(k)]
}

// emptyOrNil is what an empty phone or email means: removal when clearable, else not sent.
func emptyOrNil(p *string, clearable bool) *string {
	if p != nil && clearable {
		empty := ""
		return &empty
	}
	return nil
}
