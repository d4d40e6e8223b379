package restjson_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
	_ "google.golang.org/protobuf/types/known/durationpb"
	_ "google.golang.org/protobuf/types/known/emptypb"

	"github.com/chorus-sms/chorus/gateway/internal/restjson"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
)

// kindsProto has a field of every kind the services' messages could use, repeated too (packed
// and not), a oneof, a proto3 optional, recursion and the well-known types restjson writes.
const kindsProto = `
name: "restjson_wire_test.proto" package: "restjson.test" syntax: "proto3"
dependency: ["google/protobuf/timestamp.proto", "google/protobuf/duration.proto", "google/protobuf/wrappers.proto", "google/protobuf/empty.proto"]
enum_type { name: "Color" value { name: "COLOR_UNSPECIFIED" number: 0 } value { name: "RED" number: 1 } }
message_type {
  name: "Kinds"
  field { name: "b" number: 1 label: LABEL_OPTIONAL type: TYPE_BOOL json_name: "b" }
  field { name: "i32" number: 2 label: LABEL_OPTIONAL type: TYPE_INT32 json_name: "i32" }
  field { name: "s32" number: 3 label: LABEL_OPTIONAL type: TYPE_SINT32 json_name: "s32" }
  field { name: "sf32" number: 4 label: LABEL_OPTIONAL type: TYPE_SFIXED32 json_name: "sf32" }
  field { name: "u32" number: 5 label: LABEL_OPTIONAL type: TYPE_UINT32 json_name: "u32" }
  field { name: "f32" number: 6 label: LABEL_OPTIONAL type: TYPE_FIXED32 json_name: "f32" }
  field { name: "i64" number: 7 label: LABEL_OPTIONAL type: TYPE_INT64 json_name: "i64" }
  field { name: "s64" number: 8 label: LABEL_OPTIONAL type: TYPE_SINT64 json_name: "s64" }
  field { name: "sf64" number: 9 label: LABEL_OPTIONAL type: TYPE_SFIXED64 json_name: "sf64" }
  field { name: "u64" number: 10 label: LABEL_OPTIONAL type: TYPE_UINT64 json_name: "u64" }
  field { name: "f64" number: 11 label: LABEL_OPTIONAL type: TYPE_FIXED64 json_name: "f64" }
  field { name: "fl" number: 12 label: LABEL_OPTIONAL type: TYPE_FLOAT json_name: "fl" }
  field { name: "db" number: 13 label: LABEL_OPTIONAL type: TYPE_DOUBLE json_name: "db" }
  field { name: "s" number: 14 label: LABEL_OPTIONAL type: TYPE_STRING json_name: "s" }
  field { name: "by" number: 15 label: LABEL_OPTIONAL type: TYPE_BYTES json_name: "by" }
  field { name: "color" number: 16 label: LABEL_OPTIONAL type: TYPE_ENUM type_name: ".restjson.test.Color" json_name: "color" }
  field { name: "r_b" number: 17 label: LABEL_REPEATED type: TYPE_BOOL json_name: "rB" }
  field { name: "r_i32" number: 18 label: LABEL_REPEATED type: TYPE_INT32 json_name: "rI32" }
  field { name: "r_s32" number: 19 label: LABEL_REPEATED type: TYPE_SINT32 json_name: "rS32" options { packed: false } }
  field { name: "r_sf32" number: 20 label: LABEL_REPEATED type: TYPE_SFIXED32 json_name: "rSf32" }
  field { name: "r_u64" number: 21 label: LABEL_REPEATED type: TYPE_UINT64 json_name: "rU64" }
  field { name: "r_f64" number: 22 label: LABEL_REPEATED type: TYPE_FIXED64 json_name: "rF64" options { packed: false } }
  field { name: "r_fl" number: 23 label: LABEL_REPEATED type: TYPE_FLOAT json_name: "rFl" }
  field { name: "r_db" number: 24 label: LABEL_REPEATED type: TYPE_DOUBLE json_name: "rDb" }
  field { name: "r_s" number: 25 label: LABEL_REPEATED type: TYPE_STRING json_name: "rS" }
  field { name: "r_by" number: 26 label: LABEL_REPEATED type: TYPE_BYTES json_name: "rBy" }
  field { name: "r_color" number: 27 label: LABEL_REPEATED type: TYPE_ENUM type_name: ".restjson.test.Color" json_name: "rColor" }
  field { name: "child" number: 28 label: LABEL_OPTIONAL type: TYPE_MESSAGE type_name: ".restjson.test.Kinds" json_name: "child" }
  field { name: "children" number: 29 label: LABEL_REPEATED type: TYPE_MESSAGE type_name: ".restjson.test.Kinds" json_name: "children" }
  field { name: "ts" number: 30 label: LABEL_OPTIONAL type: TYPE_MESSAGE type_name: ".google.protobuf.Timestamp" json_name: "ts" }
  field { name: "dur" number: 31 label: LABEL_OPTIONAL type: TYPE_MESSAGE type_name: ".google.protobuf.Duration" json_name: "dur" }
  field { name: "w64" number: 32 label: LABEL_OPTIONAL type: TYPE_MESSAGE type_name: ".google.protobuf.Int64Value" json_name: "w64" }
  field { name: "empty" number: 33 label: LABEL_OPTIONAL type: TYPE_MESSAGE type_name: ".google.protobuf.Empty" json_name: "empty" }
  field { name: "cs" number: 34 label: LABEL_OPTIONAL type: TYPE_STRING oneof_index: 0 json_name: "cs" }
  field { name: "ck" number: 35 label: LABEL_OPTIONAL type: TYPE_MESSAGE type_name: ".restjson.test.Kinds" oneof_index: 0 json_name: "ck" }
  field { name: "ci" number: 36 label: LABEL_OPTIONAL type: TYPE_INT32 oneof_index: 0 json_name: "ci" }
  field { name: "oi" number: 37 label: LABEL_OPTIONAL type: TYPE_INT32 oneof_index: 1 proto3_optional: true json_name: "oi" }
  field { name: "tss" number: 38 label: LABEL_OPTIONAL type: TYPE_MESSAGE type_name: ".google.protobuf.Timestamp" json_name: "tss" }
  field { name: "far" number: 2000 label: LABEL_OPTIONAL type: TYPE_STRING json_name: "far" }
  oneof_decl { name: "choice" }
  oneof_decl { name: "_oi" }
}
`

// kinds is the Kinds message type of kindsProto.
var kinds = func() protoreflect.MessageType {
	var fdp descriptorpb.FileDescriptorProto
	if err := prototext.Unmarshal([]byte(kindsProto), &fdp); err != nil {
		panic(err)
	}
	fd, err := protodesc.NewFile(&fdp, protoregistry.GlobalFiles)
	if err != nil {
		panic(err)
	}
	return dynamicpb.NewMessageType(fd.Messages().ByName("Kinds"))
}()

// sameWire fails if AppendWire writes wire as anything but what Append writes for the message
// Unmarshal makes of it; it reports whether AppendWire wrote it.
func sameWire(t *testing.T, mt protoreflect.MessageType, wire []byte) bool {
	t.Helper()
	got, ok := restjson.AppendWire([]byte("prefix"), mt.Descriptor(), wire)
	if !ok {
		return false
	}
	m := mt.New().Interface()
	if err := proto.Unmarshal(wire, m); err != nil {
		t.Fatalf("%s: AppendWire wrote %s for an encoding Unmarshal refuses (%v): %x", mt.Descriptor().FullName(), got, err, wire)
	}
	want, ok := restjson.Append(nil, m)
	if !ok {
		t.Fatalf("%s: AppendWire wrote %s, Append gives up on the message: %x", mt.Descriptor().FullName(), got, wire)
	}
	if !bytes.Equal(got[len("prefix"):], want) {
		t.Fatalf("%s: %x\nAppendWire: %s\nAppend:     %s", mt.Descriptor().FullName(), wire, got[len("prefix"):], want)
	}
	return true
}

// sameEncoded checks m's encoding with sameWire, and that AppendWire writes it whenever Append
// writes m and m's type has nothing left to protojson.
func sameEncoded(t *testing.T, m proto.Message) {
	t.Helper()
	wire, err := proto.Marshal(m)
	if err != nil {
		return // invalid UTF-8: nothing sends it
	}
	wrote := sameWire(t, m.ProtoReflect().Type(), wire)
	if _, ok := restjson.Append(nil, m); ok && !wrote && plainTree(m.ProtoReflect().Descriptor(), map[protoreflect.FullName]bool{}) {
		t.Fatalf("%s: AppendWire gave up on %x, which Append writes", m.ProtoReflect().Descriptor().FullName(), wire)
	}
}

// plainTree reports whether no message type reachable from md is one restjson leaves to
// protojson.
func plainTree(md protoreflect.MessageDescriptor, seen map[protoreflect.FullName]bool) bool {
	if seen[md.FullName()] {
		return true
	}
	seen[md.FullName()] = true
	switch md.FullName() {
	case "google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue", "google.protobuf.FieldMask", "google.protobuf.Any":
		return false
	}
	fds := md.Fields()
	for i := range fds.Len() {
		if fd := fds.Get(i); fd.IsMap() || fd.Message() != nil && !plainTree(fd.Message(), seen) {
			return false
		}
	}
	return true
}

func TestWireEveryResponseTypeAndKind(t *testing.T) {
	t.Parallel()
	for _, mt := range append(responseTypes(t), kinds) {
		t.Run(string(mt.Descriptor().Name()), func(t *testing.T) {
			t.Parallel()
			sameEncoded(t, mt.New().Interface())
			for seed := range uint64(300) {
				m := mt.New()
				fill(m, newEntropy(binary.LittleEndian.AppendUint64(nil, seed*0x9E3779B97F4A7C15)), 0)
				sameEncoded(t, m.Interface())
			}
		})
	}
}

func TestWireListPage(t *testing.T) {
	t.Parallel()
	page := &contactsv1.ListContactsResponse{Limit: 50, HasMore: true, SortBy: "updated_at"}
	for range 3 {
		page.Contacts = append(page.Contacts, &contactsv1.ContactListItem{Id: "a", Tags: []string{"x", "y"}})
	}
	wire, err := proto.Marshal(page)
	if err != nil {
		t.Fatal(err)
	}
	if !sameWire(t, page.ProtoReflect().Type(), wire) {
		t.Fatal("AppendWire gave up on a list page")
	}
	// The contacts service writes a page's items after its other fields (its items travel as
	// unknown fields, which Marshal writes last).
	items, err := proto.Marshal(&contactsv1.ListContactsResponse{Contacts: page.Contacts})
	if err != nil {
		t.Fatal(err)
	}
	page.Contacts = nil
	rest, err := proto.Marshal(page)
	if err != nil {
		t.Fatal(err)
	}
	if !sameWire(t, page.ProtoReflect().Type(), append(rest, items...)) {
		t.Fatal("AppendWire gave up on a list page whose items come last")
	}
}

// TestWireEncodings are encodings no Marshal writes, each either written as Unmarshal reads it
// or left to the slow path.
func TestWireEncodings(t *testing.T) {
	t.Parallel()
	tag := protowire.AppendTag
	varint := func(b []byte, num protowire.Number, v uint64) []byte {
		return protowire.AppendVarint(tag(b, num, protowire.VarintType), v)
	}
	str := func(b []byte, num protowire.Number, s string) []byte {
		return protowire.AppendString(tag(b, num, protowire.BytesType), s)
	}
	packed := func(b []byte, num protowire.Number, vs ...uint64) []byte {
		var run []byte
		for _, v := range vs {
			run = protowire.AppendVarint(run, v)
		}
		return protowire.AppendBytes(tag(b, num, protowire.BytesType), run)
	}
	msg := func(b []byte, num protowire.Number, inner []byte) []byte {
		return protowire.AppendBytes(tag(b, num, protowire.BytesType), inner)
	}
	for _, c := range []struct {
		name  string
		wire  []byte
		wrote bool
	}{
		{"empty", nil, true},
		{"packed and unpacked mixed", packed(varint(packed(nil, 18, 1, 2), 18, 3), 18, 4), true},
		{"not-packed field sent packed", packed(varint(nil, 19, 5), 19, 6, 7), true},
		{"negative int32 as ten bytes", varint(nil, 2, uint64(1<<64-5)), true},
		{"int32 from a wide varint", varint(nil, 2, 1<<40|7), true},
		{"bool from a wide varint", varint(nil, 1, 256), true},
		{"unknown enum number", varint(nil, 16, 99), true},
		{"unknown fields of every type", protowire.AppendFixed64(tag(protowire.AppendFixed32(tag(str(varint(nil, 99, 1), 100, "x"),
			101, protowire.Fixed32Type), 1), 102, protowire.Fixed64Type), 2), true},
		{"reserved field number", str(nil, 19999, "x"), true},
		{"field past the table", str(nil, 5000, "x"), true},
		{"far field", str(nil, 2000, "far"), true},
		{"timestamp, seconds only", msg(nil, 30, varint(nil, 1, 1700000000)), true},
		{"timestamp, unknown field inside", msg(nil, 30, str(varint(nil, 2, 5), 9, "x")), true},
		{"timestamp out of range", msg(nil, 30, varint(nil, 1, 1<<62)), false},
		{"nested children", msg(msg(nil, 29, str(nil, 14, "a")), 29, msg(nil, 28, varint(nil, 2, 1))), true},
		{"oneof member", msg(nil, 35, nil), true},
		{"proto3 optional zero", varint(nil, 37, 0), true},
		{"repeated timestamps as a singular", msg(msg(nil, 38, nil), 38, nil), false},
		{"singular set twice", varint(varint(nil, 2, 1), 2, 2), false},
		{"message set twice", msg(msg(nil, 28, varint(nil, 2, 1)), 28, varint(nil, 3, 1)), false},
		{"oneof set twice", varint(str(nil, 34, "a"), 36, 1), false},
		{"wrong wire type", str(nil, 2, "x"), false},
		{"string field as varint", varint(nil, 14, 1), false},
		{"group", protowire.AppendTag(tag(nil, 99, protowire.StartGroupType), 99, protowire.EndGroupType), false},
		{"field number 0", varint(nil, 0, 1), false},
		{"truncated", str(nil, 14, "abc")[:4], false},
		{"invalid UTF-8", str(nil, 14, "a\xffb"), false},
		{"invalid UTF-8 in a list", str(str(nil, 25, "a"), 25, "\xff"), false},
		{"bad packed run", protowire.AppendBytes(tag(nil, 18, protowire.BytesType), []byte{0x80}), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if wrote := sameWire(t, kinds, c.wire); wrote != c.wrote {
				t.Fatalf("AppendWire wrote it: %v, want %v", wrote, c.wrote)
			}
		})
	}
}

// FuzzWire hands AppendWire arbitrary bytes as a response type or Kinds: whatever it writes must
// be what Append writes for the message Unmarshal makes of them.
func FuzzWire(f *testing.F) {
	types := append(responseTypes(f), kinds)
	for i, mt := range types {
		m := mt.New()
		fill(m, newEntropy(binary.LittleEndian.AppendUint64(nil, uint64(i+1)*0x9E3779B97F4A7C15)), 0)
		if wire, err := proto.Marshal(m.Interface()); err == nil {
			f.Add(byte(i), wire)
		}
	}
	f.Fuzz(func(t *testing.T, which byte, wire []byte) {
		sameWire(t, types[int(which)%len(types)], wire)
	})
}
