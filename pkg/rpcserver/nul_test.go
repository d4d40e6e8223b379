package rpcserver

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func TestNULIsFoundWhereverItHides(t *testing.T) {
	t.Parallel()
	st := func(m map[string]any) *structpb.Struct {
		s, err := structpb.NewStruct(m)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for want, msg := range map[string]proto.Message{
		"":       st(map[string]any{"k": "v", "list": []any{"a", 1.5, map[string]any{"x": "y"}}}),
		"value":  wrapperspb.String("a\x00b"),
		"fields": st(map[string]any{"k": []any{"x", map[string]any{"deep": "\x00"}}}),
	} {
		assert.Equal(t, want, nulField(msg.ProtoReflect()), "%v", msg)
	}
	assert.Equal(t, "fields", nulField(st(map[string]any{"k\x00": "v"}).ProtoReflect()), "map keys too")
	assert.Equal(t, "values", nulField((&structpb.ListValue{Values: []*structpb.Value{structpb.NewStringValue("ok"), structpb.NewStringValue("\x00")}}).ProtoReflect()), "lists too")
}
