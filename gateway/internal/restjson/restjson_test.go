package restjson_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/chorus-sms/chorus/gateway/internal/restjson"
	analyticsv1 "github.com/chorus-sms/chorus/proto/gen/go/analytics/v1"
	billingv1 "github.com/chorus-sms/chorus/proto/gen/go/billing/v1"
	campaignsv1 "github.com/chorus-sms/chorus/proto/gen/go/campaigns/v1"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
	messagingv1 "github.com/chorus-sms/chorus/proto/gen/go/messaging/v1"
	orgsv1 "github.com/chorus-sms/chorus/proto/gen/go/orgs/v1"
	pollsv1 "github.com/chorus-sms/chorus/proto/gen/go/polls/v1"
	webhooksv1 "github.com/chorus-sms/chorus/proto/gen/go/webhooks/v1"
)

// gatewayServices are the services whose responses the gateway writes as JSON.
var gatewayServices = []protoreflect.FileDescriptor{
	contactsv1.File_contacts_v1_contacts_proto,
	billingv1.File_billing_v1_billing_proto,
	messagingv1.File_messaging_v1_messaging_proto,
	campaignsv1.File_campaigns_v1_campaigns_proto,
	pollsv1.File_polls_v1_polls_proto,
	analyticsv1.File_analytics_v1_analytics_proto,
	webhooksv1.File_webhooks_v1_webhooks_proto,
	orgsv1.File_orgs_v1_orgs_proto,
}

// Every service the HTTP rules route to is in gatewayServices, so a new service's responses
// are compared with protojson too.
func TestEveryRoutedServiceIsCompared(t *testing.T) {
	rules, err := os.ReadFile("../../http_rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, fd := range gatewayServices {
		for i := range fd.Services().Len() {
			listed[string(fd.Services().Get(i).FullName())] = true
		}
	}
	for line := range strings.SplitSeq(string(rules), "\n") {
		_, sel, ok := strings.Cut(line, "selector:")
		if !ok {
			continue
		}
		sel = strings.TrimSpace(sel)
		svc := sel[:strings.LastIndex(sel, ".")]
		if !listed[svc] {
			t.Errorf("%s is routed by the HTTP rules but not in gatewayServices", svc)
		}
	}
}

// responseTypes are the output messages of every method of the gateway's services.
func responseTypes(t testing.TB) []protoreflect.MessageType {
	t.Helper()
	seen := map[protoreflect.FullName]bool{}
	var out []protoreflect.MessageType
	for _, fd := range gatewayServices {
		for i := range fd.Services().Len() {
			ms := fd.Services().Get(i).Methods()
			for j := range ms.Len() {
				name := ms.Get(j).Output().FullName()
				if seen[name] {
					continue
				}
				seen[name] = true
				mt, err := protoregistry.GlobalTypes.FindMessageByName(name)
				if err != nil {
					t.Fatalf("response type %s: %v", name, err)
				}
				out = append(out, mt)
			}
		}
	}
	if len(out) < 10 {
		t.Fatalf("found only %d response types", len(out))
	}
	return out
}

// same fails unless restjson writes m exactly as protojson does, or both refuse it.
func same(t *testing.T, m proto.Message) {
	t.Helper()
	want, err := restjson.Options.Marshal(m)
	got, ok := restjson.Append([]byte("prefix"), m)
	if err != nil {
		if ok {
			t.Fatalf("%s: protojson refuses it (%v), restjson wrote %s", m.ProtoReflect().Descriptor().FullName(), err, got)
		}
		return
	}
	if !ok {
		t.Fatalf("%s: restjson gave up on a message protojson writes as %s", m.ProtoReflect().Descriptor().FullName(), want)
	}
	if !bytes.Equal(got[len("prefix"):], want) {
		t.Fatalf("%s:\nrestjson: %s\nprotojson: %s", m.ProtoReflect().Descriptor().FullName(), got[len("prefix"):], want)
	}
}

func TestEveryResponseTypeEmptyAndPopulated(t *testing.T) {
	t.Parallel()
	for _, mt := range responseTypes(t) {
		t.Run(string(mt.Descriptor().Name()), func(t *testing.T) {
			t.Parallel()
			same(t, mt.New().Interface())
			for seed := range uint64(300) {
				m := mt.New()
				fill(m, newEntropy(binary.LittleEndian.AppendUint64(nil, seed*0x9E3779B97F4A7C15)), 0)
				same(t, m.Interface())
			}
		})
	}
}

func TestFixedCases(t *testing.T) {
	t.Parallel()
	contact := func(mod func(c *contactsv1.Contact)) proto.Message {
		c := &contactsv1.Contact{Id: "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", FirstName: "Ada"}
		mod(c)
		return c
	}
	for name, m := range map[string]proto.Message{
		"nil message":   (*contactsv1.Contact)(nil),
		"escapes":       contact(func(c *contactsv1.Contact) { c.LastName = "\"\\\b\f\n\r\t\x00\x01\x1f\x7f<>&'\u2028\u2029é😀\ufffd" }),
		"invalid UTF-8": contact(func(c *contactsv1.Contact) { c.LastName = "a\xffb" }),
		"null wrapper":  contact(func(c *contactsv1.Contact) { c.IsTextable = nil }),
		"false wrapper": contact(func(c *contactsv1.Contact) { c.IsTextable = wrapperspb.Bool(false) }),
		"timestamp ms":  contact(func(c *contactsv1.Contact) { c.CreatedAt = &timestamppb.Timestamp{Seconds: 1, Nanos: 1e6} }),
		"timestamp us":  contact(func(c *contactsv1.Contact) { c.CreatedAt = &timestamppb.Timestamp{Seconds: -1, Nanos: 1000} }),
		"timestamp ns": contact(func(c *contactsv1.Contact) {
			c.CreatedAt = &timestamppb.Timestamp{Seconds: 253402300799, Nanos: 999999999}
		}),
		"timestamp year 1":    contact(func(c *contactsv1.Contact) { c.CreatedAt = &timestamppb.Timestamp{Seconds: -62135596800} }),
		"timestamp too late":  contact(func(c *contactsv1.Contact) { c.CreatedAt = &timestamppb.Timestamp{Seconds: 253402300800} }),
		"timestamp bad nanos": contact(func(c *contactsv1.Contact) { c.CreatedAt = &timestamppb.Timestamp{Nanos: -1} }),
		"custom fields struct": contact(func(c *contactsv1.Contact) {
			c.CustomFields, _ = structpb.NewStruct(map[string]any{"b": 1.5, "a": "x", "c": true})
		}),
		"empty list response": &contactsv1.ListContactsResponse{},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			same(t, m)
		})
	}
}

// FuzzResponses fills a response type chosen by the input with values drawn from the input.
func FuzzResponses(f *testing.F) {
	f.Add([]byte{0})
	f.Add([]byte("\x03\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f"))
	f.Add(bytes.Repeat([]byte{0xff, 0x7f, 0x80, 0x01}, 64))
	types := responseTypes(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		e := newEntropy(data)
		m := types[e.intn(len(types))].New()
		fill(m, e, 0)
		same(t, m.Interface())
	})
}

// FuzzStrings puts one string in every string field of a contact, and in a message's plain,
// wrapper and optional string fields.
func FuzzStrings(f *testing.F) {
	for _, s := range []string{"", "plain", "\"\\\n\x00", "\u2028<script>", "\xff\xfe", "\ufffd", "é😀"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		same(t, &contactsv1.Contact{Id: s, FirstName: s, LastName: s, Email: s, Tags: []string{s, s}})
		same(t, &messagingv1.Message{Id: s, Message: s, MediaUrl: wrapperspb.String(s), MessageCategory: &s})
	})
}

// entropy hands out numbers drawn from bytes (a fuzzer's input, or a seed stretched by
// xorshift), zero once the bytes run out.
type entropy struct {
	data  []byte
	state uint64
}

func newEntropy(data []byte) *entropy {
	e := &entropy{data: data}
	if len(data) == 8 { // a seed: stretch it
		e.state = binary.LittleEndian.Uint64(data) | 1
		e.data = nil
	}
	return e
}

func (e *entropy) next() uint64 {
	if e.state != 0 {
		e.state ^= e.state << 13
		e.state ^= e.state >> 7
		e.state ^= e.state << 17
		return e.state
	}
	if len(e.data) == 0 {
		return 0
	}
	n := min(len(e.data), 8)
	var buf [8]byte
	copy(buf[:], e.data[:n])
	e.data = e.data[n:]
	return binary.LittleEndian.Uint64(buf[:])
}

func (e *entropy) intn(n int) int { return int(e.next() % uint64(n)) }

var pieces = []string{"", "a", "Ada", "\"", "\\", "\x00", "\x1f", "\x7f", "\n\t", "\u2028", "<>&'", "é", "😀", "\ufffd", "+12025550143", "\xff", "/"}

func (e *entropy) str() string {
	var s string
	for range e.intn(4) {
		p := pieces[e.intn(len(pieces))]
		if p == "\xff" && e.intn(8) != 0 { // invalid UTF-8 rarely, or every message fails
			continue
		}
		s += p
	}
	return s
}

var floats = []float64{0, math.Copysign(0, -1), 1, -1.5, 0.1, 1e-7, 1e-6, 1e20, 1e21, 123456789.125, math.MaxFloat64,
	math.SmallestNonzeroFloat64, math.NaN(), math.Inf(1), math.Inf(-1), float64(float32(0.1)), 3.4e38}

var ints = []int64{0, 1, -1, 42, math.MaxInt32, math.MinInt32, math.MaxInt64, math.MinInt64, 1 << 53, -(1 << 53) - 1}

func (e *entropy) scalar(fd protoreflect.FieldDescriptor) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(e.intn(2) == 1)
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(e.str())
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte(e.str()))
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(ints[e.intn(len(ints))]))
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(ints[e.intn(len(ints))])
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(ints[e.intn(len(ints))]))
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(uint64(ints[e.intn(len(ints))]))
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(float32(floats[e.intn(len(floats))]))
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(floats[e.intn(len(floats))])
	case protoreflect.EnumKind:
		vals := fd.Enum().Values()
		if i := e.intn(vals.Len() + 1); i < vals.Len() {
			return protoreflect.ValueOfEnum(vals.Get(i).Number())
		}
		return protoreflect.ValueOfEnum(99) // a number the descriptor does not know
	}
	panic("not a scalar: " + fd.FullName())
}

// fill sets some of m's fields (each left unset half of the time) with values from e.
func fill(m protoreflect.Message, e *entropy, depth int) {
	md := m.Descriptor()
	switch md.FullName() {
	case "google.protobuf.Timestamp":
		secs := []int64{0, 1, -1, 1_700_000_000, 253402300799, -62135596800, 253402300800}[e.intn(7)]
		nanos := []int32{0, 1, 1000, 1e6, 120e6, 999999999, 123456789, -1}[e.intn(8)]
		m.Set(md.Fields().ByName("seconds"), protoreflect.ValueOfInt64(secs))
		m.Set(md.Fields().ByName("nanos"), protoreflect.ValueOfInt32(nanos))
		return
	case "google.protobuf.Struct":
		s := &structpb.Struct{Fields: map[string]*structpb.Value{}}
		for range e.intn(4) {
			s.Fields[e.str()] = value(e, depth)
		}
		proto.Merge(m.Interface(), s)
		return
	case "google.protobuf.ListValue":
		l := &structpb.ListValue{}
		for range e.intn(4) {
			l.Values = append(l.Values, value(e, depth))
		}
		proto.Merge(m.Interface(), l)
		return
	case "google.protobuf.Value":
		proto.Merge(m.Interface(), value(e, depth))
		return
	}
	fds := md.Fields()
	for i := range fds.Len() {
		fd := fds.Get(i)
		if e.intn(2) == 0 {
			continue
		}
		switch {
		case fd.IsList():
			l := m.Mutable(fd).List()
			for range e.intn(4) {
				if fd.Kind() == protoreflect.MessageKind {
					if depth > 3 {
						break
					}
					v := l.NewElement()
					fill(v.Message(), e, depth+1)
					l.Append(v)
				} else {
					l.Append(e.scalar(fd))
				}
			}
		case fd.IsMap():
			continue // no response type has one; restjson hands maps to protojson
		case fd.Kind() == protoreflect.MessageKind:
			if depth > 3 {
				continue
			}
			fill(m.Mutable(fd).Message(), e, depth+1)
		default:
			m.Set(fd, e.scalar(fd))
		}
	}
}

func value(e *entropy, depth int) *structpb.Value {
	switch e.intn(6) {
	case 0:
		return structpb.NewNullValue()
	case 1:
		return structpb.NewBoolValue(e.intn(2) == 1)
	case 2:
		return structpb.NewNumberValue(floats[e.intn(len(floats))])
	case 3:
		if depth < 3 {
			l := &structpb.ListValue{}
			for range e.intn(3) {
				l.Values = append(l.Values, value(e, depth+1))
			}
			return structpb.NewListValue(l)
		}
	}
	return structpb.NewStringValue(e.str())
}
