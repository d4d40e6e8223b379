package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

func TestLogLinesCarryTheTraceOfTheirContext(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(LogHandler(slog.NewJSONHandler(&buf, nil))).With("service", "test")
	tp := sdktrace.NewTracerProvider()
	ctx, span := tp.Tracer("t").Start(context.Background(), "op")
	log.InfoContext(ctx, "inside")
	span.End()
	log.InfoContext(context.Background(), "outside")

	lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	require.Len(t, lines, 2)
	var inside, outside map[string]any
	require.NoError(t, json.Unmarshal(lines[0], &inside))
	require.NoError(t, json.Unmarshal(lines[1], &outside))
	assert.Equal(t, span.SpanContext().TraceID().String(), inside["trace_id"])
	assert.Equal(t, span.SpanContext().SpanID().String(), inside["span_id"])
	assert.Equal(t, "test", inside["service"], "attributes added with With survive")
	assert.NotContains(t, outside, "trace_id")
}

func TestSetupWithoutEndpointExportsNothing(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	shutdown, err := Setup(context.Background(), "test")
	require.NoError(t, err)
	assert.NoError(t, shutdown(context.Background()))
}

// With no exporter, a caller's trace context still reaches the service it calls: the server's
// interceptors (its log lines) see the caller's trace, on unary calls and on streams.
func TestTraceContextCrossesAGRPCCallWithoutAnExporter(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	_, err := Setup(context.Background(), "test")
	require.NoError(t, err)

	seen := make(chan trace.SpanContext, 2)
	srv := grpc.NewServer(append(GRPCServer(),
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			seen <- trace.SpanContextFromContext(ctx)
			return h(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			seen <- trace.SpanContextFromContext(ss.Context())
			return h(srv, ss)
		}))...)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), append(GRPCClient(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })

	ctx, span := sdktrace.NewTracerProvider().Tracer("t").Start(context.Background(), "caller")
	defer span.End()
	client := healthpb.NewHealthClient(conn)
	_, err = client.Check(ctx, &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	assert.Equal(t, span.SpanContext().TraceID(), (<-seen).TraceID(), "unary")
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watch, err := client.Watch(wctx, &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	_, err = watch.Recv()
	require.NoError(t, err)
	assert.Equal(t, span.SpanContext().TraceID(), (<-seen).TraceID(), "stream")

	_, err = client.Check(context.Background(), &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	assert.False(t, (<-seen).IsValid(), "no trace sent, none seen")
}
