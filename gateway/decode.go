package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/chorus-sms/chorus/gateway/internal/restjson"
	"github.com/chorus-sms/chorus/pkg/apierr"
)

// jsonMarshaler is protojson as the REST contract wants it: lowerCamelCase keys, every field
// present (nullable wrapper fields print null; proto3 optional scalars are left out), unknown
// request fields rejected.
type jsonMarshaler struct {
	runtime.JSONPb
}

func newJSONMarshaler() *jsonMarshaler {
	return &jsonMarshaler{runtime.JSONPb{
		MarshalOptions:   restjson.Options,
		UnmarshalOptions: protojson.UnmarshalOptions{DiscardUnknown: false},
	}}
}

// marshalBuffers are reused between responses: a list page is tens of kilobytes, and growing
// a fresh slice to that size on every response was a good part of the gateway's garbage.
var marshalBuffers = sync.Pool{New: func() any { return new([]byte) }}

// Marshal writes messages with restjson (protojson's bytes, several times faster), falling
// back to protojson for what restjson leaves to it; an answer answerCodec already read as JSON
// is that JSON; response_body values that are not messages (bare lists) go through
// grpc-gateway's own path as before.
func (m *jsonMarshaler) Marshal(v any) ([]byte, error) {
	msg, ok := v.(proto.Message)
	if !ok {
		return m.JSONPb.Marshal(v)
	}
	if j, ok := answerJSON(msg); ok {
		return j, nil
	}
	bp := marshalBuffers.Get().(*[]byte)
	defer marshalBuffers.Put(bp)
	b, ok := restjson.Append((*bp)[:0], msg)
	if cap(b) <= maxPooledBuffer {
		*bp = b
	}
	if !ok {
		return m.MarshalOptions.Marshal(msg)
	}
	return bytes.Clone(b), nil
}

// maxPooledBuffer keeps a rare huge response from pinning its buffer in the pool.
const maxPooledBuffer = 1 << 20

// NewDecoder reads the whole body (already capped by the size limit) and accepts exactly one
// JSON value on every route: the stock decoder stops after the first value and ignores
// whatever follows it, which is what routes whose body is one field of the request
// (`body: campaign`) got. An empty body decodes as io.EOF, which the generated handlers treat
// as an empty message. A value that does not fit names its JSON path (contactFilter.tags), and
// so does a string holding a NUL, which no service can store.
func (m *jsonMarshaler) NewDecoder(r io.Reader) runtime.Decoder {
	return runtime.DecoderFunc(func(v any) error {
		b, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		if len(bytes.TrimSpace(b)) == 0 {
			return io.EOF
		}
		msg, ok := bodyMessage(v)
		if !ok {
			if err := oneJSONValue(b); err != nil {
				return err
			}
			return m.JSONPb.Unmarshal(b, v)
		}
		if err := m.UnmarshalOptions.Unmarshal(b, msg); err != nil {
			return bodyError(b, err)
		}
		if bytes.Contains(b, []byte(`\u0000`)) {
			if path, found := nulPath(b); found {
				return fieldError{Field: path, Problem: "must not contain NUL characters", Message: "invalid value for " + path + ": NUL character"}
			}
		}
		return nil
	})
}

// bodyMessage is the message a body decodes into: v itself, or the message a pointer to a
// message field points at (allocated when nil), as the generated handlers of `body: <field>`
// routes pass.
func bodyMessage(v any) (proto.Message, bool) {
	if msg, ok := v.(proto.Message); ok {
		return msg, true
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Pointer {
		return nil, false
	}
	field := rv.Elem()
	if _, ok := reflect.Zero(field.Type()).Interface().(proto.Message); !ok {
		return nil, false
	}
	if field.IsNil() {
		field.Set(reflect.New(field.Type().Elem()))
	}
	return field.Interface().(proto.Message), true
}

// oneJSONValue refuses a body holding anything but one JSON value.
func oneJSONValue(b []byte) error {
	d := json.NewDecoder(bytes.NewReader(b))
	var raw json.RawMessage
	if err := d.Decode(&raw); err != nil {
		return err
	}
	if _, err := d.Token(); err != io.EOF {
		return errors.New("data after the JSON value")
	}
	return nil
}

// fieldError is a request the gateway refuses itself, naming the field by its path in the
// request. The generated handlers keep only an error's text, so the text carries it and
// fieldErrorRE reads it back.
type fieldError struct{ Field, Problem, Message string }

func (e fieldError) Error() string {
	return "chorus field " + strconv.Quote(e.Field) + " " + strconv.Quote(e.Problem) + ": " + e.Message
}

var fieldErrorRE = regexp.MustCompile(`^chorus field ("(?:[^"\\]|\\.)*") ("(?:[^"\\]|\\.)*"): (.*)$`)

// parseFieldError reads back a fieldError's text.
func parseFieldError(msg string) (fieldError, bool) {
	m := fieldErrorRE.FindStringSubmatch(msg)
	if m == nil {
		return fieldError{}, false
	}
	field, err1 := strconv.Unquote(m[1])
	problem, err2 := strconv.Unquote(m[2])
	if err1 != nil || err2 != nil {
		return fieldError{}, false
	}
	return fieldError{Field: field, Problem: problem, Message: m[3]}, true
}

// protojsonPosRE is where protojson says it failed: "(line 1:18)", the column in runes.
var protojsonPosRE = regexp.MustCompile(`\(line (\d+):(\d+)\)`)

// bodyError names the JSON path of the key or value protojson refused, read from the position
// its error gives; a failure with no place in the body (syntax, trailing data) is returned as
// is and answered "malformed JSON body".
func bodyError(b []byte, err error) error {
	msg := err.Error()
	pos := protojsonPosRE.FindStringSubmatch(msg)
	if pos == nil {
		return err
	}
	line, _ := strconv.Atoi(pos[1])
	col, _ := strconv.Atoi(pos[2])
	off, ok := byteOffset(b, line, col)
	if !ok {
		return err
	}
	path, isKey := jsonPathAt(b, off)
	switch {
	case path == "":
		return err
	case isKey && strings.Contains(msg, "unknown field"):
		return fieldError{Field: path, Problem: "unknown field", Message: "unknown field " + path}
	default:
		return fieldError{Field: path, Problem: "invalid value", Message: "invalid value for " + path}
	}
}

// byteOffset turns a 1-based line and rune column into a byte offset of b.
func byteOffset(b []byte, line, col int) (int, bool) {
	off := 0
	for ; line > 1; line-- {
		i := bytes.IndexByte(b[off:], '\n')
		if i < 0 {
			return 0, false
		}
		off += i + 1
	}
	for ; col > 1; col-- {
		if off >= len(b) {
			return 0, false
		}
		_, size := utf8.DecodeRune(b[off:])
		off += size
	}
	return off, true
}

// jsonPathAt returns the path of the JSON key or value that covers byte off of b, and whether
// it is a key; "" when off is at no key or value inside the top-level one.
func jsonPathAt(b []byte, off int) (path string, isKey bool) {
	walkJSON(b, func(p string, _ json.Token, key bool, end int) bool {
		if end > off {
			path, isKey = p, key
			return false
		}
		return true
	})
	return path, isKey
}

// nulPath returns the path of the first string holding a NUL (a key holding one: the object's
// path).
func nulPath(b []byte) (path string, found bool) {
	walkJSON(b, func(p string, tok json.Token, key bool, _ int) bool {
		s, ok := tok.(string)
		if !ok || !strings.ContainsRune(s, 0) {
			return true
		}
		path, found = p, true
		if key {
			if i := strings.LastIndexAny(p, ".["); i >= 0 {
				path = p[:i]
			} else {
				path = ""
			}
		}
		return false
	})
	return path, found
}

// walkJSON calls visit with each token of b's first JSON value and its path (a key's path
// ends with the key), until visit returns false or the value ends or breaks off.
func walkJSON(b []byte, visit func(path string, tok json.Token, isKey bool, end int) bool) {
	type frame struct {
		obj     bool
		wantKey bool
		key     string
		idx     int
	}
	var st []frame
	pathOf := func(key string) string {
		var sb strings.Builder
		for i, f := range st {
			k := f.key
			if i == len(st)-1 && key != "" {
				k = key
			}
			switch {
			case !f.obj:
				sb.WriteString("[" + strconv.Itoa(f.idx) + "]")
			case sb.Len() == 0:
				sb.WriteString(k)
			default:
				sb.WriteString("." + k)
			}
		}
		return sb.String()
	}
	valueDone := func() {
		if n := len(st); n > 0 {
			if st[n-1].obj {
				st[n-1].wantKey = true
			} else {
				st[n-1].idx++
			}
		}
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	for {
		tok, err := d.Token()
		if err != nil {
			return
		}
		end := int(d.InputOffset())
		n := len(st)
		if s, ok := tok.(string); ok && n > 0 && st[n-1].obj && st[n-1].wantKey {
			if !visit(pathOf(s), tok, true, end) {
				return
			}
			st[n-1].key, st[n-1].wantKey = s, false
			continue
		}
		if !visit(pathOf(""), tok, false, end) {
			return
		}
		switch tok {
		case json.Delim('{'):
			st = append(st, frame{obj: true, wantKey: true})
		case json.Delim('['):
			st = append(st, frame{})
		case json.Delim('}'), json.Delim(']'):
			st = st[:n-1]
			if len(st) == 0 {
				return
			}
			valueDone()
		default:
			if n == 0 {
				return
			}
			valueDone()
		}
	}
}

// The generated handlers flatten every decoding failure into an InvalidArgument status whose
// message is the library's error text, so the field it names can only be read back from that
// text. These patterns cover protojson's and the query parser's wording;
// TestMalformedRequestsNameTheField pins them, so a library upgrade that changes the wording
// fails the tests instead of the clients.
var (
	unknownFieldRE = regexp.MustCompile(`unknown field "([^"]+)"`)
	badValueRE     = regexp.MustCompile(`invalid value for \S+ field (\S+?):`)
	badQueryRE     = regexp.MustCompile(`^parsing (?:field|list|map key|map value) "([^"]+)"`)
)

// requestParseError turns a request the gateway could not decode into a VALIDATION_FAILED
// error naming the field (the REST name) when the failure names one.
func requestParseError(ctx context.Context, r *http.Request, msg string) apiError {
	e := apiError{Status: http.StatusBadRequest, Code: apierr.ReasonValidation}
	field, problem := "", ""
	fe, isFieldError := parseFieldError(msg)
	switch {
	case isFieldError:
		field, problem, e.Message = fe.Field, fe.Problem, fe.Message
	case badQueryRE.MatchString(msg):
		field, problem = restFieldName(ctx, badQueryRE.FindStringSubmatch(msg)[1]), "invalid value"
		e.Message = "invalid query parameter " + field
	case unknownFieldRE.MatchString(msg):
		field, problem = unknownFieldRE.FindStringSubmatch(msg)[1], "unknown field"
		e.Message = "unknown field " + field
	case badValueRE.MatchString(msg):
		field, problem = badValueRE.FindStringSubmatch(msg)[1], "invalid value"
		e.Message = "invalid value for " + field
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		e.Message = "invalid request"
	default:
		e.Message = "malformed JSON body"
	}
	if field != "" {
		e.Fields = map[string]string{field: problem}
	}
	return e
}

// restFieldName maps a proto field name of the called method's request message to its JSON
// (REST) name; the query parser reports proto names.
func restFieldName(ctx context.Context, protoName string) string {
	method, ok := runtime.RPCMethod(ctx) // "/chorus.contacts.v1.ContactsService/ListContacts"
	if !ok {
		return protoName
	}
	full := protoreflect.FullName(strings.ReplaceAll(strings.TrimPrefix(method, "/"), "/", "."))
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(full)
	if err != nil {
		return protoName
	}
	md, ok := d.(protoreflect.MethodDescriptor)
	if !ok {
		return protoName
	}
	if f := md.Input().Fields().ByName(protoreflect.Name(protoName)); f != nil {
		return f.JSONName()
	}
	return protoName
}
