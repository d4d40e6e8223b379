package rpcserver

import (
	"context"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/chorus-sms/chorus/pkg/apierr"
)

// rejectNUL answers 400 VALIDATION_FAILED, naming the field, for a request holding a NUL
// character in any string (nested ones and map keys included): PostgreSQL cannot store NUL in
// text or jsonb, and without this check such input would surface as a 500 from whichever query
// met it first.
func rejectNUL(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if m, ok := req.(proto.Message); ok {
		if field := nulField(m.ProtoReflect()); field != "" {
			return nil, apierr.Field(field, "must not contain NUL characters")
		}
	}
	return handler(ctx, req)
}

// rejectNULStream is rejectNUL for each request a stream receives.
func rejectNULStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	return handler(srv, nulCheckedStream{ss})
}

type nulCheckedStream struct{ grpc.ServerStream }

func (s nulCheckedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	if pm, ok := m.(proto.Message); ok {
		if field := nulField(pm.ProtoReflect()); field != "" {
			return apierr.Field(field, "must not contain NUL characters")
		}
	}
	return nil
}

// nulField returns the JSON name of the first top-level field of m that holds a NUL anywhere
// inside it, or "".
func nulField(m protoreflect.Message) string {
	var found string
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fieldHasNUL(fd, v) {
			found = fd.JSONName()
			return false
		}
		return true
	})
	return found
}

func fieldHasNUL(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
	switch {
	case fd.IsList():
		l := v.List()
		for i := range l.Len() {
			if valueHasNUL(fd, l.Get(i)) {
				return true
			}
		}
		return false
	case fd.IsMap():
		has := false
		v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
			has = strings.ContainsRune(k.String(), 0) || valueHasNUL(fd.MapValue(), mv)
			return !has
		})
		return has
	}
	return valueHasNUL(fd, v)
}

func valueHasNUL(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return strings.ContainsRune(v.String(), 0)
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return nulField(v.Message()) != ""
	}
	return false
}
