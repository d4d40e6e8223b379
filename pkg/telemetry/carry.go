package telemetry

import (
	"context"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// With no exporter, spans are recorded nowhere, but a caller's W3C trace context must still
// reach every service's log lines (LogHandler). Instrumenting every call to record spans that
// go nowhere costs each request a span's bookkeeping in the gateway and at both ends of every
// gRPC call; carrying the context costs a header read and a header write.

// GRPCClient is the dial options that trace a connection's calls when Tracing, and otherwise
// carry the caller's trace context in their metadata.
func GRPCClient() []grpc.DialOption {
	if Tracing() {
		return []grpc.DialOption{grpc.WithStatsHandler(otelgrpc.NewClientHandler())}
	}
	return []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			return invoker(inject(ctx), method, req, reply, cc, opts...)
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			return streamer(inject(ctx), desc, cc, method, opts...)
		}),
	}
}

// GRPCServer is the server option that traces calls when Tracing, and otherwise gives each
// call's context the trace context its caller sent.
func GRPCServer() []grpc.ServerOption {
	if Tracing() {
		return []grpc.ServerOption{grpc.StatsHandler(otelgrpc.NewServerHandler())}
	}
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			return handler(extract(ctx), req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
			return handler(srv, carriedStream{ss, extract(ss.Context())})
		}),
	}
}

// inject writes ctx's trace context into its outgoing metadata, when it has one.
func inject(ctx context.Context) context.Context {
	if !trace.SpanContextFromContext(ctx).IsValid() && baggage.FromContext(ctx).Len() == 0 {
		return ctx
	}
	md, _ := metadata.FromOutgoingContext(ctx)
	md = md.Copy()
	otel.GetTextMapPropagator().Inject(ctx, mdCarrier(md))
	return metadata.NewOutgoingContext(ctx, md)
}

// extract reads the trace context a call's metadata carries into ctx.
func extract(ctx context.Context) context.Context {
	md, ok := metadata.FromIncomingContext(ctx)
	if !ok {
		return ctx
	}
	return otel.GetTextMapPropagator().Extract(ctx, mdCarrier(md))
}

// mdCarrier is gRPC metadata as a propagation.TextMapCarrier.
type mdCarrier metadata.MD

func (c mdCarrier) Get(key string) string {
	if v := metadata.MD(c).Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

func (c mdCarrier) Set(key, value string) { metadata.MD(c).Set(key, value) }

func (c mdCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// carriedStream is a server stream whose context carries its caller's trace context.
type carriedStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s carriedStream) Context() context.Context { return s.ctx }
