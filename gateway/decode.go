package gateway

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"

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
// JSON value: the stock decoder stops after the first value and ignores whatever follows it.
// An empty body decodes as io.EOF, which the generated handlers treat as an empty message.
func (m *jsonMarshaler) NewDecoder(r io.Reader) runtime.Decoder {
	return runtime.DecoderFunc(func(v any) error {
		b, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		if len(bytes.TrimSpace(b)) == 0 {
			return io.EOF
		}
		if msg, ok := v.(proto.Message); ok {
			return m.UnmarshalOptions.Unmarshal(b, msg)
		}
		return m.JSONPb.Unmarshal(b, v)
	})
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
	switch {
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
