// Package restjson writes protobuf messages as the gateway's REST JSON: byte for byte what
// protojson.MarshalOptions{EmitUnpopulated: true} writes, several times faster. protojson
// collects and sorts every message's fields on each call (its unpopulated-field ranger) and
// goes through generic interfaces per value; here each message type's field list is worked out
// once and the output is appended to one buffer.
//
// Whatever this package does not reproduce itself (maps, extensions, Any, Struct and the other
// JSON-valued well-known types, out-of-range timestamps, invalid UTF-8) is handed to protojson:
// a nested well-known value is embedded as protojson writes it, anything else makes Append
// report false so the caller marshals the whole message with protojson (and gets its error).
package restjson

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"math/bits"
	"strconv"
	"sync"
	"sync/atomic"
	"unicode/utf8"
	"unsafe"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"
)

// Options are the protojson options this package reproduces.
var Options = protojson.MarshalOptions{EmitUnpopulated: true}

// comma is what protojson writes between values. Its single-line output adds a space after
// commas or not, chosen per program binary (to keep clients from depending on the bytes), so
// the choice is read off protojson itself once.
var comma = func() string {
	probe := &structpb.ListValue{Values: []*structpb.Value{structpb.NewNumberValue(1), structpb.NewNumberValue(2)}}
	b, err := Options.Marshal(probe)
	if err == nil && string(b) == "[1, 2]" {
		return ", "
	}
	return ","
}()

// Append appends m's JSON to b. It reports false when m needs something only protojson
// writes; b's contents past its original length are then undefined.
func Append(b []byte, m proto.Message) ([]byte, bool) {
	if m == nil {
		return append(b, '{', '}'), true
	}
	r := m.ProtoReflect() // a typed nil writes its defaults, as protojson's does
	return appendMessage(b, r, planOf(r.Descriptor()))
}

// Kinds of message with a JSON form of their own.
const (
	plainMessage = iota
	timestampMessage
	durationMessage
	wrapperMessage
	emptyMessage
	embeddedMessage // written by protojson, embedded as is
	unsupportedMessage
)

// plan is what a message type's JSON needs, worked out once per type.
type plan struct {
	kind   int
	fields []field // a plain message's fields; a wrapper's value; a Timestamp's or Duration's two
	wire   wirePlan
}

type field struct {
	fd       protoreflect.FieldDescriptor
	name     string // `"jsonName":`
	oneof    bool   // in a oneof (proto3 optional too): written only when set
	presence bool   // unset is null
	list     bool
	sub      atomic.Pointer[plan] // a message field's plan, looked up on first use
	wire     wireField
}

// subPlan is the plan of f's message type, kept on the field so a nested message costs no
// lookup in plans (it is found there once, lazily, since message types can nest themselves).
func (f *field) subPlan() *plan {
	if p := f.sub.Load(); p != nil {
		return p
	}
	p := planOf(f.fd.Message())
	f.sub.Store(p)
	return p
}

var plans sync.Map // protoreflect.FullName → *plan

func planOf(md protoreflect.MessageDescriptor) *plan {
	if p, ok := plans.Load(md.FullName()); ok {
		return p.(*plan)
	}
	p := &plan{kind: kindOf(md)}
	fds := md.Fields()
	switch p.kind {
	case wrapperMessage:
		p.fields = []field{{fd: fds.ByNumber(1)}}
	case timestampMessage, durationMessage:
		p.fields = []field{{fd: fds.ByNumber(1)}, {fd: fds.ByNumber(2)}}
	case plainMessage:
		p.fields = make([]field, 0, fds.Len())
		for i := range fds.Len() {
			fd := fds.Get(i)
			if fd.IsMap() || fd.IsWeak() {
				p.kind = unsupportedMessage
				break
			}
			name, err := appendString(nil, fd.JSONName())
			if err != nil {
				p.kind = unsupportedMessage
				break
			}
			p.fields = append(p.fields, field{
				fd: fd, name: string(name) + ":", oneof: fd.ContainingOneof() != nil,
				presence: fd.HasPresence(), list: fd.IsList(),
			})
		}
		if md.ExtensionRanges().Len() > 0 {
			p.kind = unsupportedMessage
		}
	}
	p.wire = newWirePlan(md, p.fields)
	if v, loaded := plans.LoadOrStore(md.FullName(), p); loaded {
		return v.(*plan)
	}
	return p
}

func kindOf(md protoreflect.MessageDescriptor) int {
	if md.FullName().Parent() != "google.protobuf" {
		return plainMessage
	}
	switch md.Name() {
	case "Timestamp":
		return timestampMessage
	case "Duration":
		return durationMessage
	case "BoolValue", "Int32Value", "Int64Value", "UInt32Value", "UInt64Value", "FloatValue",
		"DoubleValue", "StringValue", "BytesValue":
		return wrapperMessage
	case "Empty":
		return emptyMessage
	case "Struct", "Value", "ListValue", "FieldMask":
		return embeddedMessage
	default: // Any, and anything added later
		return unsupportedMessage
	}
}

func appendMessage(b []byte, m protoreflect.Message, p *plan) ([]byte, bool) {
	switch p.kind {
	case timestampMessage:
		return appendTimestamp(b, m, p)
	case durationMessage:
		return appendDuration(b, m, p)
	case wrapperMessage:
		f := &p.fields[0]
		return appendSingular(b, m.Get(f.fd), f)
	case emptyMessage:
		return append(b, '{', '}'), true
	case embeddedMessage:
		out, err := Options.MarshalAppend(b, m.Interface())
		return out, err == nil
	case unsupportedMessage:
		return b, false
	}
	b = append(b, '{')
	first := true
	ok := true
	for i := range p.fields {
		f := &p.fields[i]
		var v protoreflect.Value
		switch {
		case f.oneof || f.presence:
			if !m.Has(f.fd) {
				if f.oneof {
					continue
				}
				if !first {
					b = append(b, comma...)
				}
				first = false
				b = append(b, f.name...)
				b = append(b, "null"...)
				continue
			}
			v = m.Get(f.fd)
		default:
			v = m.Get(f.fd)
		}
		if !first {
			b = append(b, comma...)
		}
		first = false
		b = append(b, f.name...)
		if f.list {
			b, ok = appendList(b, v.List(), f)
		} else {
			b, ok = appendSingular(b, v, f)
		}
		if !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

func appendList(b []byte, l protoreflect.List, f *field) ([]byte, bool) {
	b = append(b, '[')
	for i := range l.Len() {
		if i > 0 {
			b = append(b, comma...)
		}
		var ok bool
		if b, ok = appendSingular(b, l.Get(i), f); !ok {
			return b, false
		}
	}
	return append(b, ']'), true
}

func appendSingular(b []byte, v protoreflect.Value, f *field) ([]byte, bool) {
	fd := f.fd
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return strconv.AppendBool(b, v.Bool()), true
	case protoreflect.StringKind:
		out, err := appendString(b, v.String())
		return out, err == nil
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return strconv.AppendInt(b, v.Int(), 10), true
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return strconv.AppendUint(b, v.Uint(), 10), true
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		b = append(b, '"')
		return append(strconv.AppendInt(b, v.Int(), 10), '"'), true // 64-bit integers are strings
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		b = append(b, '"')
		return append(strconv.AppendUint(b, v.Uint(), 10), '"'), true
	case protoreflect.FloatKind:
		return appendFloat(b, v.Float(), 32), true
	case protoreflect.DoubleKind:
		return appendFloat(b, v.Float(), 64), true
	case protoreflect.BytesKind:
		b = append(b, '"')
		return append(base64.StdEncoding.AppendEncode(b, v.Bytes()), '"'), true
	case protoreflect.EnumKind:
		if fd.Enum().FullName() == "google.protobuf.NullValue" {
			return append(b, "null"...), true
		}
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			out, err := appendString(b, string(ev.Name()))
			return out, err == nil
		}
		return strconv.AppendInt(b, int64(v.Enum()), 10), true
	case protoreflect.MessageKind:
		return appendMessage(b, v.Message(), f.subPlan())
	default: // groups
		return b, false
	}
}

// Timestamp and Duration limits protojson enforces; beyond them it fails, and so do we.
const (
	minTimestampSeconds  = -62135596800 // 0001-01-01T00:00:00Z
	maxTimestampSeconds  = 253402300799 // 9999-12-31T23:59:59Z
	maxSecondsInDuration = 315576000000
	maxNanos             = 999999999
)

// appendTimestamp writes RFC 3339 in UTC with 0, 3, 6 or 9 fractional digits, as protojson does.
func appendTimestamp(b []byte, m protoreflect.Message, p *plan) ([]byte, bool) {
	return appendTimestampValue(b, m.Get(p.fields[0].fd).Int(), m.Get(p.fields[1].fd).Int())
}

func appendTimestampValue(b []byte, secs, nanos int64) ([]byte, bool) {
	if secs < minTimestampSeconds || secs > maxTimestampSeconds || nanos < 0 || nanos > maxNanos {
		return b, false
	}
	days, rem := secs/secondsPerDay, secs%secondsPerDay
	if rem < 0 {
		days, rem = days-1, rem+secondsPerDay
	}
	year, month, day := civil(days)
	hour, minute, sec := int(rem/3600), int(rem%3600/60), int(rem%60)
	var d [21]byte // "YYYY-MM-DDTHH:MM:SS with its opening quote
	d[0] = '"'
	put2(d[1:], year/100)
	put2(d[3:], year%100)
	d[5] = '-'
	put2(d[6:], int(month))
	d[8] = '-'
	put2(d[9:], day)
	d[11] = 'T'
	put2(d[12:], hour)
	d[14] = ':'
	put2(d[15:], minute)
	d[17] = ':'
	put2(d[18:], sec)
	b = append(b, d[:20]...)
	b = appendFraction(b, nanos)
	return append(b, 'Z', '"'), true
}

const secondsPerDay = 86400

// civil is the proleptic Gregorian date days after 1970-01-01, as time.Time.Date gives it
// (H. Hinnant's civil_from_days); days stays within the range of Timestamp, year 1 to 9999,
// where every intermediate value is positive.
func civil(days int64) (year, month, day int) {
	z := days + 719468 // days since 0000-03-01
	era := z / 146097
	doe := z - era*146097                                  // [0, 146096]
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365 // [0, 399]
	doy := doe - (365*yoe + yoe/4 - yoe/100)               // [0, 365], from March 1
	mp := (5*doy + 2) / 153                                // [0, 11], from March
	day = int(doy - (153*mp+2)/5 + 1)
	month = int(mp + 3)
	if month > 12 {
		month -= 12
	}
	year = int(yoe + era*400)
	if month <= 2 {
		year++
	}
	return year, month, day
}

// digitPairs are the two-digit numbers 00 to 99, for writing a date's fields.
const digitPairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879" +
	"8081828384858687888990919293949596979899"

// put2 writes n (0 ≤ n < 100) as two digits at b.
func put2(b []byte, n int) {
	b[0], b[1] = digitPairs[2*n], digitPairs[2*n+1]
}

// appendDuration writes seconds with 0, 3, 6 or 9 fractional digits and an "s", as protojson does.
func appendDuration(b []byte, m protoreflect.Message, p *plan) ([]byte, bool) {
	return appendDurationValue(b, m.Get(p.fields[0].fd).Int(), m.Get(p.fields[1].fd).Int())
}

func appendDurationValue(b []byte, secs, nanos int64) ([]byte, bool) {
	if secs < -maxSecondsInDuration || secs > maxSecondsInDuration || nanos < -maxNanos || nanos > maxNanos ||
		(secs > 0 && nanos < 0) || (secs < 0 && nanos > 0) {
		return b, false
	}
	b = append(b, '"')
	if secs < 0 || nanos < 0 {
		b = append(b, '-')
		secs, nanos = -secs, -nanos
	}
	b = strconv.AppendInt(b, secs, 10)
	b = appendFraction(b, nanos)
	return append(b, 's', '"'), true
}

// appendFraction writes nanos as "", ".ddd", ".dddddd" or ".ddddddddd": the shortest of
// those that loses nothing.
func appendFraction(b []byte, nanos int64) []byte {
	if nanos == 0 {
		return b
	}
	digits := 9
	for digits > 3 && nanos%1000 == 0 {
		nanos /= 1000
		digits -= 3
	}
	var f [10]byte
	f[0] = '.'
	for i := digits; i > 0; i-- {
		f[i] = byte('0' + nanos%10)
		nanos /= 10
	}
	return append(b, f[:digits+1]...)
}

// errInvalidUTF8 fails a string protojson would refuse.
var errInvalidUTF8 = invalidUTF8{}

type invalidUTF8 struct{}

func (invalidUTF8) Error() string { return "invalid UTF-8" }

// appendString quotes s exactly as protojson does: only '"', '\\' and control characters are
// escaped (\b \f \n \r \t, else \u00XX), everything else, HTML characters and U+2028
// included, is written as is; invalid UTF-8 is an error.
func appendString(out []byte, in string) ([]byte, error) {
	out = append(out, '"')
	i := indexNeedEscape(in)
	in, out = in[i:], append(out, in[:i]...)
	for len(in) > 0 {
		switch r, n := utf8.DecodeRuneInString(in); {
		case r == utf8.RuneError && n == 1:
			return out, errInvalidUTF8
		case r < ' ' || r == '"' || r == '\\':
			out = append(out, '\\')
			switch r {
			case '"', '\\':
				out = append(out, byte(r))
			case '\b':
				out = append(out, 'b')
			case '\f':
				out = append(out, 'f')
			case '\n':
				out = append(out, 'n')
			case '\r':
				out = append(out, 'r')
			case '\t':
				out = append(out, 't')
			default:
				out = append(out, 'u')
				out = append(out, "0000"[1+(bits.Len32(uint32(r))-1)/4:]...)
				out = strconv.AppendUint(out, uint64(r), 16)
			}
			in = in[n:]
		default:
			i := indexNeedEscape(in[n:])
			in, out = in[n+i:], append(out, in[:n+i]...)
		}
	}
	return append(out, '"'), nil
}

// indexNeedEscape is the index of the first rune that needs a look: a control character,
// '"', '\\', or utf8.RuneError (a real U+FFFD or invalid UTF-8, told apart by the caller).
func indexNeedEscape(s string) int {
	i := 0
	// Eight bytes at a time while none is a control character, '"', '\\' or past ASCII (the
	// tests may flag a byte that is none of those, never miss one that is).
	for ; len(s)-i >= 8; i += 8 {
		x := binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(s[i:]), 8))
		if (below(x, ' ')|below(x^(lsbs*'"'), 1)|below(x^(lsbs*'\\'), 1)|x)&msbs != 0 {
			break
		}
	}
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < ' ' || c == '\\' || c == '"' {
				return i
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError {
			return i
		}
		i += n
	}
	return len(s)
}

const (
	lsbs = 0x0101010101010101
	msbs = 0x8080808080808080
)

// below has the top bit of each byte of x that is less than n (n ≤ 128) set, and may set it
// for other bytes above one that is, never for a byte when none is.
func below(x uint64, n byte) uint64 { return (x - lsbs*uint64(n)) &^ x & msbs }

// appendFloat writes a float as protojson does (encoding/json's rules; NaN and the
// infinities as strings).
func appendFloat(out []byte, n float64, bitSize int) []byte {
	switch {
	case math.IsNaN(n):
		return append(out, `"NaN"`...)
	case math.IsInf(n, +1):
		return append(out, `"Infinity"`...)
	case math.IsInf(n, -1):
		return append(out, `"-Infinity"`...)
	}
	format := byte('f')
	if abs := math.Abs(n); abs != 0 {
		if bitSize == 64 && (abs < 1e-6 || abs >= 1e21) ||
			bitSize == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	out = strconv.AppendFloat(out, n, format, -1, bitSize)
	if format == 'e' {
		n := len(out)
		if n >= 4 && out[n-4] == 'e' && out[n-3] == '-' && out[n-2] == '0' {
			out[n-2] = out[n-1]
			out = out[:n-1]
		}
	}
	return out
}
