// Package mergefields turns a campaign or poll text into one recipient's text: merge fields
// ({{firstName}}, {{lastName}}, {{email}}, {{phone}}, {{address}}, {{city}}, {{state}},
// {{zip}} and any custom field, spaces inside the braces allowed) replaced by the contact's
// values, a missing value by nothing; then, unless turned off, smsrules.Normalize.
package mergefields

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/smsrules"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
)

var field = regexp.MustCompile(`\{\{\s*([A-Za-z][A-Za-z0-9_]*)\s*\}\}`)

// Template is a text parsed once to be rendered for many recipients (a fan-out renders a
// campaign's text for each of its audience): its literal runs and merge fields in order.
type Template struct {
	parts []part
}

// part is a literal run of a template, or the name of a merge field.
type part struct {
	text    string
	isField bool
}

// Compile parses msg's merge fields.
func Compile(msg string) *Template {
	t := &Template{}
	last := 0
	for _, m := range field.FindAllStringSubmatchIndex(msg, -1) {
		if m[0] > last {
			t.parts = append(t.parts, part{text: msg[last:m[0]]})
		}
		t.parts = append(t.parts, part{text: msg[m[2]:m[3]], isField: true})
		last = m[1]
	}
	if last < len(msg) {
		t.parts = append(t.parts, part{text: msg[last:]})
	}
	return t
}

// Text renders the template for m.
func (t *Template) Text(m *contactsv1.AudienceMember, normalize bool) string {
	return t.render(func(name string) string { return value(m, name) }, normalize)
}

// render writes the template with each field's value from lookup.
func (t *Template) render(lookup func(name string) string, normalize bool) string {
	var b strings.Builder
	for _, p := range t.parts {
		if p.isField {
			b.WriteString(lookup(p.text))
		} else {
			b.WriteString(p.text)
		}
	}
	out := b.String()
	if normalize {
		out = smsrules.Normalize(out)
	}
	return out
}

// Text renders msg for m; to render one text for many, Compile it once.
func Text(msg string, m *contactsv1.AudienceMember, normalize bool) string {
	return Compile(msg).Text(m, normalize)
}

func value(m *contactsv1.AudienceMember, name string) string {
	switch name {
	case "firstName":
		return m.GetFirstName()
	case "lastName":
		return m.GetLastName()
	case "email":
		return m.GetEmail()
	case "phone":
		return m.GetPhone()
	case "address":
		return m.GetAddress()
	case "city":
		return m.GetCity()
	case "state":
		return m.GetState()
	case "zip":
		return m.GetZip()
	}
	v, ok := m.GetCustomFields().GetFields()[name]
	if !ok {
		return ""
	}
	switch k := v.GetKind().(type) {
	case *structpb.Value_StringValue:
		return k.StringValue
	case *structpb.Value_BoolValue:
		return strconv.FormatBool(k.BoolValue)
	case *structpb.Value_NumberValue:
		return strconv.FormatFloat(k.NumberValue, 'f', -1, 64)
	}
	return fmt.Sprint(v.AsInterface())
}

// Preview renders msg with data in place of a contact (a test send's mergePreviewData): each
// merge field takes data's value for its name, a field data lacks renders empty.
func Preview(msg string, data map[string]string, normalize bool) string {
	return Compile(msg).render(func(name string) string { return data[name] }, normalize)
}

// Fits is whether a rendered text can go as one message (at most smsrules.MaxTextLength
// characters); a recipient's text that does not is not sent at all.
func Fits(text string) bool { return utf8.RuneCountInString(text) <= smsrules.MaxTextLength }

// CheckFits adds a problem to f under field when msg fits no recipient: over
// smsrules.MaxTextLength characters even with every merge field empty (normalized as it will be
// sent). what says which text it is when that is more than the field ("sent with question 1
// as one message").
func CheckFits(f apierr.Fields, field, msg string, normalize bool, what string) {
	n := utf8.RuneCountInString(Preview(msg, nil, normalize))
	if n <= smsrules.MaxTextLength {
		return
	}
	if what != "" {
		what += ", "
	}
	f.Add(field, fmt.Sprintf("%sis %d characters with every merge field empty; one message carries at most %d", what, n, smsrules.MaxTextLength))
}
