// Package httpcode is how a service chooses the success status of its REST route: it sets a
// gRPC response header that the gateway turns into the HTTP status (201 on create, 200 on
// merge, 202 on an immediate poll start) and never forwards. Both ends import it, so the key
// is written once.
package httpcode

import (
	"context"
	"strconv"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// Header is the gRPC response metadata key carrying the status.
const Header = "x-http-code"

// Set asks the gateway to answer the call being served with code instead of 200.
func Set(ctx context.Context, code int) {
	_ = grpc.SetHeader(ctx, metadata.Pairs(Header, strconv.Itoa(code)))
}
