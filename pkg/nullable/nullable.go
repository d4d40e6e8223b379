// Package nullable turns a stored optional value (a nil pointer when unset) into the wire type
// the gateway prints as null when unset: the wrapper and Timestamp fields of the REST protos.
package nullable

import (
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// String is s, nil when s is.
func String(s *string) *wrapperspb.StringValue {
	if s == nil {
		return nil
	}
	return wrapperspb.String(*s)
}

// UUID is u's text, nil when u is.
func UUID(u *uuid.UUID) *wrapperspb.StringValue {
	if u == nil {
		return nil
	}
	return wrapperspb.String(u.String())
}

// Time is t, nil when t is.
func Time(t *time.Time) *timestamppb.Timestamp {
	if t == nil {
		return nil
	}
	return timestamppb.New(*t)
}
