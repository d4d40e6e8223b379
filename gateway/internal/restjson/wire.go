package restjson

import (
	"math"
	"slices"
	"strconv"
	"sync"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// AppendWire appends the JSON of the message of type md encoded in wire: what Append writes
// for the message proto.Unmarshal makes of wire, written straight from the encoding, so the
// gateway never builds the message only to take it apart again (unmarshalling a list page
// allocates every string, timestamp and wrapper of every item).
//
// It reports false, b's contents past its original length then undefined, for anything it
// does not reproduce exactly: besides what Append leaves to protojson, any encoding Unmarshal
// would reject or read in some other way than field by field (a singular field or oneof set
// twice, which Unmarshal merges or overwrites; a field of the wrong wire type, which it keeps
// as unknown; groups; nesting deeper than maxWireDepth). The caller then unmarshals wire and
// calls Append, exactly as if this function did not exist.
func AppendWire(b []byte, md protoreflect.MessageDescriptor, wire []byte) ([]byte, bool) {
	st := wireStates.Get().(*wireState)
	defer wireStates.Put(st)
	return st.appendMessage(b, wire, planOf(md), 0)
}

// wireState is the scratch of one AppendWire call: the seen slots of the messages being
// written, a message's taken on entry and given back on return, so the slots of a page's
// every item are the same few, allocated once.
type wireState struct {
	seen []seen
}

var wireStates = sync.Pool{New: func() any { return new(wireState) }}

// take returns n cleared slots.
func (st *wireState) take(n int) []seen {
	base := len(st.seen)
	st.seen = slices.Grow(st.seen, n)[:base+n]
	at := st.seen[base:]
	clear(at)
	return at
}

// maxWireDepth bounds AppendWire's recursion; deeper messages take the slow path, which has
// the protobuf library's own limit.
const maxWireDepth = 64

// wirePlan is what AppendWire needs of a message type beyond its JSON plan.
type wirePlan struct {
	ok       bool    // the type's own fields can be read from the wire (nested types are checked as reached)
	byNumber []int16 // index in fields by field number, -1 for none
}

// wireField is what AppendWire needs of a field.
type wireField struct {
	kind     protoreflect.Kind
	typ      protowire.Type // the wire type of one value
	packable bool           // a repeated scalar, which may also come packed
	oneof    int            // index of its oneof (synthetic ones included), -1 for none
}

// maxTableNumber bounds the field numbers a plan indexes in a table; a type with a larger one
// is left to the slow path.
const maxTableNumber = 1 << 12

func newWirePlan(md protoreflect.MessageDescriptor, fields []field) wirePlan {
	switch {
	case md.Oneofs().Len() > 64, md.RequiredNumbers().Len() > 0: // oneofs tracked in a uint64; required fields need Unmarshal's check
		return wirePlan{}
	}
	maxNumber := 0
	for i := range fields {
		fd := fields[i].fd
		if int(fd.Number()) > maxNumber {
			maxNumber = int(fd.Number())
		}
		typ, ok := wireTypeOf(fd.Kind())
		if !ok {
			return wirePlan{}
		}
		oneof := -1
		if o := fd.ContainingOneof(); o != nil {
			oneof = o.Index()
		}
		fields[i].wire = wireField{kind: fd.Kind(), typ: typ, packable: fd.IsList() && typ != protowire.BytesType, oneof: oneof}
	}
	if maxNumber >= maxTableNumber {
		return wirePlan{}
	}
	byNumber := make([]int16, maxNumber+1)
	for i := range byNumber {
		byNumber[i] = -1
	}
	for i := range fields {
		byNumber[fields[i].fd.Number()] = int16(i)
	}
	return wirePlan{ok: true, byNumber: byNumber}
}

func wireTypeOf(k protoreflect.Kind) (protowire.Type, bool) {
	switch k {
	case protoreflect.BoolKind, protoreflect.EnumKind, protoreflect.Int32Kind, protoreflect.Sint32Kind,
		protoreflect.Uint32Kind, protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Uint64Kind:
		return protowire.VarintType, true
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind, protoreflect.FloatKind:
		return protowire.Fixed32Type, true
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind, protoreflect.DoubleKind:
		return protowire.Fixed64Type, true
	case protoreflect.StringKind, protoreflect.BytesKind, protoreflect.MessageKind:
		return protowire.BytesType, true
	}
	return 0, false // groups
}

// seen is where a field's values are in a message's encoding: the first value's tag, the last
// value, and how many values there are.
type seen struct {
	tag, start, end int
	count           int
}

func (st *wireState) appendMessage(b []byte, wire []byte, p *plan, depth int) ([]byte, bool) {
	if depth > maxWireDepth {
		return b, false
	}
	switch p.kind {
	case embeddedMessage, unsupportedMessage:
		return b, false
	}
	if !p.wire.ok {
		return b, false
	}
	base := len(st.seen)
	defer func() { st.seen = st.seen[:base] }()
	at := st.take(len(p.fields))
	if !scanWire(wire, p, at) {
		return b, false
	}
	switch p.kind {
	case timestampMessage, durationMessage:
		secs, ok := wireInt(wire, at[0], &p.fields[0])
		if !ok {
			return b, false
		}
		nanos, ok := wireInt(wire, at[1], &p.fields[1])
		if !ok {
			return b, false
		}
		if p.kind == timestampMessage {
			return appendTimestampValue(b, secs, nanos)
		}
		return appendDurationValue(b, secs, nanos)
	case wrapperMessage:
		return st.appendField(b, wire, at[0], &p.fields[0], depth)
	case emptyMessage:
		return append(b, '{', '}'), true
	}
	b = append(b, '{')
	first := true
	ok := true
	for i := range p.fields {
		f := &p.fields[i]
		if at[i].count == 0 && f.oneof {
			continue
		}
		if !first {
			b = append(b, comma...)
		}
		first = false
		b = append(b, f.name...)
		if b, ok = st.appendField(b, wire, at[i], f, depth); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

// scanWire finds each field's values in wire, checking the encoding as Unmarshal would, and
// refusing whatever Unmarshal would not read as one value a singular field (see AppendWire).
func scanWire(wire []byte, p *plan, at []seen) bool {
	var oneofs uint64
	for i := 0; i < len(wire); {
		tag := i
		num, typ, n := protowire.ConsumeTag(wire[i:])
		if n < 0 || num > protowire.MaxValidNumber {
			return false
		}
		i += n
		var start, end int
		switch typ {
		case protowire.VarintType:
			_, n = protowire.ConsumeVarint(wire[i:])
			start, end = i, i+n
		case protowire.Fixed32Type:
			_, n = protowire.ConsumeFixed32(wire[i:])
			start, end = i, i+n
		case protowire.Fixed64Type:
			_, n = protowire.ConsumeFixed64(wire[i:])
			start, end = i, i+n
		case protowire.BytesType:
			var v []byte
			v, n = protowire.ConsumeBytes(wire[i:])
			start, end = i+n-len(v), i+n
		default: // groups, known or not
			return false
		}
		if n < 0 {
			return false
		}
		i = end
		idx := -1
		if int(num) < len(p.wire.byNumber) {
			idx = int(p.wire.byNumber[num])
		}
		if idx < 0 { // unknown: skipped, as protojson leaves unknown fields out
			continue
		}
		f := &p.fields[idx]
		if typ != f.wire.typ && !(f.wire.packable && typ == protowire.BytesType) {
			return false
		}
		s := &at[idx]
		if s.count > 0 && !f.list {
			return false
		}
		if o := f.wire.oneof; o >= 0 {
			if oneofs&(1<<o) != 0 {
				return false
			}
			oneofs |= 1 << o
		}
		if s.count == 0 {
			s.tag = tag
		}
		s.start, s.end = start, end
		s.count++
	}
	return true
}

// appendField writes a field's value (a list's values) found by scanWire, or its default
// when it has none.
func (st *wireState) appendField(b []byte, wire []byte, s seen, f *field, depth int) ([]byte, bool) {
	if f.list {
		return st.appendList(b, wire, s, f, depth)
	}
	if s.count == 0 {
		if f.presence {
			return append(b, "null"...), true
		}
		return appendSingular(b, f.fd.Default(), f)
	}
	return st.appendValue(b, wire[s.start:s.end], f.wire.typ, f, depth)
}

// appendList writes every value of a repeated field, in the order of the encoding, each
// packed run taken apart.
func (st *wireState) appendList(b []byte, wire []byte, s seen, f *field, depth int) ([]byte, bool) {
	b = append(b, '[')
	first := true
	num := f.fd.Number()
	for i := s.tag; s.count > 0 && i < len(wire); {
		n, typ, m := protowire.ConsumeTag(wire[i:])
		if m < 0 {
			return b, false
		}
		i += m
		m = protowire.ConsumeFieldValue(n, typ, wire[i:])
		if m < 0 {
			return b, false
		}
		value := wire[i : i+m]
		i += m
		if n != num {
			continue
		}
		s.count--
		if typ == protowire.BytesType && f.wire.packable {
			run, _ := protowire.ConsumeBytes(value)
			for len(run) > 0 {
				k := wireValueLen(run, f.wire.typ)
				if k < 0 {
					return b, false
				}
				if !first {
					b = append(b, comma...)
				}
				first = false
				var ok bool
				if b, ok = st.appendValue(b, run[:k], f.wire.typ, f, depth); !ok {
					return b, false
				}
				run = run[k:]
			}
			continue
		}
		if typ == protowire.BytesType {
			value, _ = protowire.ConsumeBytes(value)
		}
		if !first {
			b = append(b, comma...)
		}
		first = false
		var ok bool
		if b, ok = st.appendValue(b, value, typ, f, depth); !ok {
			return b, false
		}
	}
	return append(b, ']'), true
}

func wireValueLen(b []byte, typ protowire.Type) int {
	switch typ {
	case protowire.VarintType:
		_, n := protowire.ConsumeVarint(b)
		return n
	case protowire.Fixed32Type:
		_, n := protowire.ConsumeFixed32(b)
		return n
	case protowire.Fixed64Type:
		_, n := protowire.ConsumeFixed64(b)
		return n
	}
	return -1
}

// appendValue writes one value: v is a varint's or a fixed value's bytes, or a
// length-delimited value's content.
func (st *wireState) appendValue(b []byte, v []byte, typ protowire.Type, f *field, depth int) ([]byte, bool) {
	switch f.wire.kind {
	case protoreflect.MessageKind:
		return st.appendMessage(b, v, f.subPlan(), depth+1)
	case protoreflect.StringKind: // most values: straight to the writer
		out, err := appendString(b, unsafe.String(unsafe.SliceData(v), len(v)))
		return out, err == nil
	case protoreflect.BoolKind:
		x, _ := protowire.ConsumeVarint(v)
		return strconv.AppendBool(b, protowire.DecodeBool(x)), true
	}
	value, ok := wireScalar(v, typ, f.fd)
	if !ok {
		return b, false
	}
	return appendSingular(b, value, f)
}

// wireScalar is the value Unmarshal gives a scalar field for its encoding v.
func wireScalar(v []byte, typ protowire.Type, fd protoreflect.FieldDescriptor) (protoreflect.Value, bool) {
	var x uint64
	switch typ {
	case protowire.VarintType:
		x, _ = protowire.ConsumeVarint(v)
	case protowire.Fixed32Type:
		x32, _ := protowire.ConsumeFixed32(v)
		x = uint64(x32)
	case protowire.Fixed64Type:
		x, _ = protowire.ConsumeFixed64(v)
	}
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(protowire.DecodeBool(x)), true
	case protoreflect.EnumKind:
		n := protoreflect.EnumNumber(int32(x))
		if fd.Enum().IsClosed() && fd.Enum().Values().ByNumber(n) == nil {
			return protoreflect.Value{}, false // Unmarshal keeps it as an unknown field
		}
		return protoreflect.ValueOfEnum(n), true
	case protoreflect.Int32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(x)), true
	case protoreflect.Sint32Kind:
		return protoreflect.ValueOfInt32(int32(protowire.DecodeZigZag(x & math.MaxUint32))), true
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(x)), true
	case protoreflect.Int64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(int64(x)), true
	case protoreflect.Sint64Kind:
		return protoreflect.ValueOfInt64(protowire.DecodeZigZag(x)), true
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(x), true
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(math.Float32frombits(uint32(x))), true
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(math.Float64frombits(x)), true
	case protoreflect.StringKind:
		// Only read while the JSON is written (appendString checks the UTF-8 Unmarshal would).
		return protoreflect.ValueOfString(unsafe.String(unsafe.SliceData(v), len(v))), true
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes(v), true
	}
	return protoreflect.Value{}, false
}

// wireInt is a Timestamp's or Duration's seconds or nanos, zero when absent.
func wireInt(wire []byte, s seen, f *field) (int64, bool) {
	if s.count == 0 {
		return 0, true
	}
	v, ok := wireScalar(wire[s.start:s.end], f.wire.typ, f.fd)
	if !ok {
		return 0, false
	}
	return v.Int(), true
}
