// Package mergefields turns a campaign or poll text into one recipient's text: merge fields
// ({{firstName}}, {{lastName}}, {{email}}, {{phone}}, {{address}}, {{city}}, {{state}},
// {{zip}} and any custom field, spaces inside the braces allowed) replaced by the contact's
// values, a missing value by nothing; then, unless turned off, smstext normalization.
package mergefields

import (
	"fmt"
	"regexp"
	"strconv"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/chorus-sms/chorus/pkg/smstext"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
)

var field = regexp.MustCompile(`\{\{\s*([A-Za-z][A-Za-z0-9_]*)\s*\}\}`)

// Text renders msg for m.
func Text(msg string, m *contactsv1.AudienceMember, normalize bool) string {
	out := field.ReplaceAllStringFunc(msg, func(tag string) string {
		return value(m, field.FindStringSubmatch(tag)[1])
	})
	if normalize {
		out = smstext.Normalize(out)
	}
	return out
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
	out := field.ReplaceAllStringFunc(msg, func(tag string) string {
		return data[field.FindStringSubmatch(tag)[1]]
	})
	if normalize {
		out = smstext.Normalize(out)
	}
	return out
}
