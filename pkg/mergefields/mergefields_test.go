package mergefields_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/mergefields"
	"github.com/chorus-sms/chorus/pkg/smsrules"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
)

func TestText(t *testing.T) {
	t.Parallel()
	m := &contactsv1.AudienceMember{
		FirstName: "Zoë", City: "Springfield", Phone: "+12025550143",
		CustomFields: &structpb.Struct{Fields: map[string]*structpb.Value{
			"team": structpb.NewStringValue("math"), "seats": structpb.NewNumberValue(2), "vip": structpb.NewBoolValue(true),
		}},
	}
	msg := "Hi {{firstName}}{{lastName}} — {{ city }}/{{team}}/{{seats}}/{{vip}}/{{missing}}/{{phone}} {{not a field}}"
	assert.Equal(t, "Hi Zoë — Springfield/math/2/true//+12025550143 {{not a field}}", mergefields.Text(msg, m, false))
	assert.Equal(t, "Hi Zoe - Springfield/math/2/true//+12025550143 {{not a field}}", mergefields.Text(msg, m, true), "normalized after merging")
}

func TestPreview(t *testing.T) {
	t.Parallel()
	msg := "Hi {{firstName}} — {{ team }}/{{missing}}"
	data := map[string]string{"firstName": "Zoë", "team": "math"}
	assert.Equal(t, "Hi Zoë — math/", mergefields.Preview(msg, data, false))
	assert.Equal(t, "Hi Zoe - math/", mergefields.Preview(msg, data, true))
	assert.Equal(t, "Hi  - /", mergefields.Preview(msg, nil, true), "no preview data: every field empty")
}

// One compiled template renders each member's own values: fields at either end, side by side,
// repeated, and a text without any.
func TestTemplateRendersEachMember(t *testing.T) {
	t.Parallel()
	ada := &contactsv1.AudienceMember{FirstName: "Ada", LastName: "Lovelace", City: "London"}
	bo := &contactsv1.AudienceMember{FirstName: "Bo"}
	tpl := mergefields.Compile("{{firstName}}{{lastName}}: hi {{ firstName }}, {{city}}!{{zip}}")
	assert.Equal(t, "AdaLovelace: hi Ada, London!", tpl.Text(ada, true))
	assert.Equal(t, "Bo: hi Bo, !", tpl.Text(bo, true))
	assert.Equal(t, "No fields {{ 1x }}", mergefields.Compile("No fields {{ 1x }}").Text(ada, true))
	assert.Empty(t, mergefields.Compile("").Text(ada, true))
}

// A template fits no one when its text without merge fields is over one message; a rendered
// text fits up to smsrules.MaxTextLength characters.
func TestCheckFits(t *testing.T) {
	f := apierr.Fields{}
	mergefields.CheckFits(f, "ok", "{{bio}}"+strings.Repeat("x", smsrules.MaxTextLength), false, "")
	mergefields.CheckFits(f, "over", "{{bio}}"+strings.Repeat("x", smsrules.MaxTextLength+1), false, "")
	mergefields.CheckFits(f, "intro", strings.Repeat("é", smsrules.MaxTextLength+1), true, "sent with question 1")
	if _, ok := f["ok"]; ok || f["over"] == "" || !strings.HasPrefix(f["intro"], "sent with question 1, is 1601") {
		t.Errorf("CheckFits: %v", f)
	}
	if !mergefields.Fits(strings.Repeat("x", smsrules.MaxTextLength)) || mergefields.Fits(strings.Repeat("x", smsrules.MaxTextLength+1)) {
		t.Error("Fits")
	}
}
