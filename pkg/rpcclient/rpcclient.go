// Package rpcclient dials the internal gRPC services the way every caller should: plaintext
// inside the cluster network, with trace context propagated.
package rpcclient

import (
	"fmt"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// WindowSize is the HTTP/2 flow-control window of every stream and connection, both ways.
// Fixed windows turn off grpc-go's bandwidth-delay estimation, which pings the peer on most
// answers and makes each call wake both processes once more; inside the cluster network a
// megabyte is never the limit.
const WindowSize = 1 << 20

// Dial returns a lazy connection to the service named name at addr; it connects on first use.
func Dial(name, addr string) (*grpc.ClientConn, error) {
	conn, err := grpc.NewClient(addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithStatsHandler(otelgrpc.NewClientHandler()),
		grpc.WithInitialWindowSize(WindowSize),
		grpc.WithInitialConnWindowSize(WindowSize),
	)
	if err != nil {
		return nil, fmt.Errorf("dial %s at %s: %w", name, addr, err)
	}
	return conn, nil
}
