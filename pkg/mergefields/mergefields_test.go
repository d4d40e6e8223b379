package mergefields_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/chorus-sms/chorus/pkg/mergefields"
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
