package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	_ "embed"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v4"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/chorus-sms/chorus/gateway/internal/restjson"
)

// A route's generated handler receives the service's answer as a message and hands it to
// jsonMarshaler.Marshal, which only takes it apart again; building it allocated every string,
// timestamp and wrapper of a list page. For the routes that answer the whole message (no
// response_body in the HTTP rules, so nothing reads the message's fields), the answer's
// encoding is written straight as the route's JSON when it arrives (restjson.AppendWire), and
// the message carries that JSON to Marshal in its unknown fields (see answerCodec). An answer
// AppendWire does not reproduce exactly is unmarshalled as before, so every answer reads,
// fails and prints as it did.

//go:embed http_rules.yaml
var httpRules []byte

// wholeAnswers are the full method names of the unary calls whose every HTTP binding answers
// the whole response message.
var wholeAnswers = mustWholeAnswers(httpRules)

func mustWholeAnswers(rules []byte) map[string]bool {
	m, err := parseWholeAnswers(rules)
	if err != nil {
		panic(fmt.Sprintf("gateway: http_rules.yaml: %v", err))
	}
	return m
}

type httpRule struct {
	Selector           string     `yaml:"selector"`
	ResponseBody       string     `yaml:"response_body"`
	AdditionalBindings []httpRule `yaml:"additional_bindings"`
}

func parseWholeAnswers(rules []byte) (map[string]bool, error) {
	var doc struct {
		HTTP struct {
			Rules []httpRule `yaml:"rules"`
		} `yaml:"http"`
	}
	if err := yaml.Unmarshal(rules, &doc); err != nil {
		return nil, err
	}
	whole, partial := map[string]bool{}, map[string]bool{}
	for _, r := range doc.HTTP.Rules {
		i := strings.LastIndex(r.Selector, ".")
		if i < 0 {
			return nil, fmt.Errorf("selector %q is not service.method", r.Selector)
		}
		method := "/" + r.Selector[:i] + "/" + r.Selector[i+1:]
		whole[method] = true
		for _, b := range append([]httpRule{r}, r.AdditionalBindings...) {
			if b.ResponseBody != "" {
				partial[method] = true
			}
		}
	}
	for m := range partial {
		delete(whole, m)
	}
	return whole, nil
}

// answerConn is the connection the mux's generated clients call through: a call in
// wholeAnswers gets its answer read by answerCodec.
type answerConn struct {
	*grpc.ClientConn
}

func (c answerConn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	if wholeAnswers[method] {
		// A copy: the caller's array is its own.
		opts = append(opts[:len(opts):len(opts)], grpc.ForceCodecV2(answerCodec{infoFrom(ctx)}))
	}
	return c.ClientConn.Invoke(ctx, method, args, reply, opts...)
}

// answerCodec sends requests as the proto codec does and reads answers into their JSON. The
// JSON is written in a pooled buffer the request keeps until its answer has been written
// (observe gives it back), so a page's JSON is not copied out of the buffer it was written in.
type answerCodec struct {
	info *requestInfo
}

var protoCodec = encoding.GetCodecV2(grpcproto.Name)

// Name is the proto codec's, so the call's content type (and the service's codec) is the
// usual one.
func (answerCodec) Name() string { return grpcproto.Name }

func (answerCodec) Marshal(v any) (mem.BufferSlice, error) { return protoCodec.Marshal(v) }

func (c answerCodec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return protoCodec.Unmarshal(data, v)
	}
	var wire []byte
	if len(data) == 1 {
		wire = data[0].ReadOnlyData()
	} else {
		buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
		defer buf.Free()
		wire = buf.ReadOnlyData()
	}
	bp := marshalBuffers.Get().(*[]byte)
	field, ok := appendAnswer((*bp)[:0], m.ProtoReflect().Descriptor(), wire)
	if cap(field) <= maxPooledBuffer {
		*bp = field
	}
	if !ok {
		marshalBuffers.Put(bp)
		return protoCodec.Unmarshal(data, v)
	}
	if c.info.answer == nil {
		c.info.answer = bp // the request holds the buffer until its answer is written
	} else {
		field = bytes.Clone(field) // a second answer in one request (none today) gets a copy
		marshalBuffers.Put(bp)
	}
	proto.Reset(m)
	m.ProtoReflect().SetUnknown(field)
	return nil
}

// answerField is the field number the JSON travels under: in the range protobuf reserves for
// its implementation, which no .proto file may declare. answerKey, random per process, comes
// first in the field, so no service can forge an answer that passes as read.
const answerField = 19999

var answerKey = func() []byte {
	k := make([]byte, 16)
	_, _ = rand.Read(k)
	return k
}()

var answerTag = protowire.AppendTag(nil, answerField, protowire.BytesType)

// answerLenSize is the room kept for the field's length, written once the JSON is: a varint
// padded to five bytes (which protobuf reads as any other) holds any length a buffer may have.
const answerLenSize = 5

// appendAnswer appends the unknown field carrying the JSON of wire, an encoded md.
func appendAnswer(b []byte, md protoreflect.MessageDescriptor, wire []byte) ([]byte, bool) {
	start := len(b)
	b = append(b, answerTag...)
	lenAt := len(b)
	b = append(b, make([]byte, answerLenSize)...)
	b = append(b, answerKey...)
	b, ok := restjson.AppendWire(b, md, wire)
	n := len(b) - lenAt - answerLenSize
	if !ok || n >= 1<<(7*answerLenSize) {
		return b[:start], false
	}
	for i := range answerLenSize - 1 {
		b[lenAt+i] = byte(n>>(7*i)) | 0x80
	}
	b[lenAt+answerLenSize-1] = byte(n >> (7 * (answerLenSize - 1)))
	return b, true
}

// answerJSON is the JSON answerCodec read m's answer into, if it did.
func answerJSON(m proto.Message) ([]byte, bool) {
	u := m.ProtoReflect().GetUnknown()
	if !bytes.HasPrefix(u, answerTag) {
		return nil, false
	}
	v, n := protowire.ConsumeBytes(u[len(answerTag):])
	if n != len(u)-len(answerTag) || !bytes.HasPrefix(v, answerKey) {
		return nil, false
	}
	return v[len(answerKey):], true
}
