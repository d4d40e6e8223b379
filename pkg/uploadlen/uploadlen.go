// Package uploadlen is how the gateway tells a service that a streamed upload's length was
// declared (Content-Length) and is within the route's limit: the body then ends where declared
// or the call fails, so the service may commit what it has read before the end. A body of
// unknown length (chunked) may still be cut off as too large, so its service keeps nothing of
// it until it ends. Both ends import it, so the key is written once.
package uploadlen

import (
	"context"
	"strconv"

	"google.golang.org/grpc/metadata"
)

// MD is the gRPC request metadata key carrying the declared length in bytes.
const MD = "x-chorus-upload-length"

// AppendToOutgoing marks the call ctx makes as an upload of n declared bytes.
func AppendToOutgoing(ctx context.Context, n int64) context.Context {
	return metadata.AppendToOutgoingContext(ctx, MD, strconv.FormatInt(n, 10))
}

// Declared reports whether the call being served is an upload of a declared length.
func Declared(ctx context.Context) bool {
	md, _ := metadata.FromIncomingContext(ctx)
	v := md.Get(MD)
	if len(v) != 1 {
		return false
	}
	n, err := strconv.ParseInt(v[0], 10, 64)
	return err == nil && n >= 0
}
