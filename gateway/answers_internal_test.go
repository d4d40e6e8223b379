package gateway

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/chorus-sms/chorus/gateway/internal/restjson"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
)

func TestWholeAnswersAreTheRulesWithoutResponseBody(t *testing.T) {
	assert.True(t, wholeAnswers["/chorus.contacts.v1.ContactsService/ListContacts"])
	assert.False(t, wholeAnswers["/chorus.contacts.v1.ContactsService/GetContact"], "response_body: contact")
	assert.False(t, wholeAnswers["/chorus.analytics.v1.AnalyticsService/ExportCampaigns"], "not an HTTP rule")

	got, err := parseWholeAnswers([]byte(`
http:
  rules:
    - selector: a.v1.S.Whole
      get: /whole
    - selector: a.v1.S.Part
      get: /part
      response_body: item
    - selector: a.v1.S.Bound
      get: /bound
      additional_bindings:
        - get: /bound/item
          response_body: item
    - selector: a.v1.S.Twice
      get: /twice/item
      response_body: item
    - selector: a.v1.S.Twice
      get: /twice
`))
	require.NoError(t, err)
	assert.Equal(t, map[string]bool{"/a.v1.S/Whole": true}, got)
}

// decode runs m's encoding through answerCodec into a new message of m's type.
func decode(t *testing.T, m proto.Message) proto.Message {
	t.Helper()
	return decodeIn(t, &requestInfo{}, m)
}

func decodeIn(t *testing.T, info *requestInfo, m proto.Message) proto.Message {
	t.Helper()
	wire, err := proto.Marshal(m)
	require.NoError(t, err)
	out := m.ProtoReflect().New().Interface()
	// Two buffers, as a large answer arrives.
	half := len(wire) / 2
	require.NoError(t, answerCodec{info}.Unmarshal(mem.BufferSlice{mem.SliceBuffer(wire[:half]), mem.SliceBuffer(wire[half:])}, out))
	return out
}

func TestAnswerCodecReadsJSONOrTheMessage(t *testing.T) {
	page := &contactsv1.ListContactsResponse{Limit: 2, SortBy: "updated_at", Contacts: []*contactsv1.ContactListItem{{Id: "a", Tags: []string{"x"}}}}
	read := decode(t, page)
	got, ok := answerJSON(read)
	require.True(t, ok)
	want, ok := restjson.Append(nil, page)
	require.True(t, ok)
	assert.Equal(t, string(want), string(got))
	j, err := newJSONMarshaler().Marshal(read)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(j))

	// A Struct is protojson's to write: the answer is read as a message, as it always was.
	fields, err := structpb.NewStruct(map[string]any{"a": 1})
	require.NoError(t, err)
	contact := &contactsv1.Contact{Id: "a", CustomFields: fields}
	read = decode(t, contact)
	_, ok = answerJSON(read)
	assert.False(t, ok)
	assert.True(t, proto.Equal(contact, read))
}

func TestAnswerJSONNeedsTheProcessKey(t *testing.T) {
	forged := &contactsv1.ListContactsResponse{}
	payload := append(make([]byte, len(answerKey)), `{"forged":true}`...)
	forged.ProtoReflect().SetUnknown(protowire.AppendBytes(protowire.AppendTag(nil, answerField, protowire.BytesType), payload))
	_, ok := answerJSON(forged)
	assert.False(t, ok)
	j, err := newJSONMarshaler().Marshal(forged)
	require.NoError(t, err)
	assert.NotContains(t, string(j), "forged")
}

// The request keeps the buffer its answer was written in; a second answer gets its own bytes.
func TestAnswerBufferIsTheRequests(t *testing.T) {
	info := &requestInfo{}
	first := decodeIn(t, info, &contactsv1.ListContactsResponse{SortBy: "first"})
	require.NotNil(t, info.answer)
	held := info.answer
	second := decodeIn(t, info, &contactsv1.ListContactsResponse{SortBy: "second"})
	assert.Same(t, held, info.answer)
	a, ok := answerJSON(first)
	require.True(t, ok)
	b, ok := answerJSON(second)
	require.True(t, ok)
	assert.Contains(t, string(a), `"first"`)
	assert.Contains(t, string(b), `"second"`)
}
