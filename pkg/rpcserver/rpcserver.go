// Package rpcserver builds the gRPC server every service runs: tracing, Prometheus metrics,
// panic recovery and error masking, the tenant interceptor, and the standard health service.
package rpcserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"sync"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/clients"
	"github.com/chorus-sms/chorus/pkg/telemetry"
	"github.com/chorus-sms/chorus/pkg/tenant"
)

// New returns a server with the common interceptors and a health service reporting SERVING.
// unscoped lists full method names callable without an organization (operator RPCs); the
// health check is always one, since probes and the gateway's /readyz carry no organization.
func New(log *slog.Logger, unscoped ...string) *grpc.Server {
	srv := grpc.NewServer(append(telemetry.GRPCServer(),
		grpc.NumStreamWorkers(streamWorkers()),
		grpc.InitialWindowSize(clients.WindowSize),
		grpc.InitialConnWindowSize(clients.WindowSize),
		grpc.ChainUnaryInterceptor(
			metrics().UnaryServerInterceptor(),
			apierr.UnaryServerInterceptor(log),
			tenant.UnaryServerInterceptor(append(unscoped, healthpb.Health_Check_FullMethodName)...),
			rejectNUL,
		),
		// Streams (contacts' audience) take the same boundary and tenancy; their requests are
		// checked for NUL characters as each is received.
		grpc.ChainStreamInterceptor(
			metrics().StreamServerInterceptor(),
			apierr.StreamServerInterceptor(log),
			tenant.StreamServerInterceptor(append(unscoped, healthpb.Health_Watch_FullMethodName)...),
			rejectNULStream,
		),
	)...)
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	return srv
}

// streamWorkers is how many goroutines a server keeps to run calls on. Without them every
// call starts a goroutine whose stack, small at first, is copied each time it doubles on the
// way down the interceptors, the handler and pgx, several times a call; a worker keeps its
// grown stack from call to call. A call arriving while every worker is busy gets a goroutine
// of its own, as before, so workers never queue calls.
func streamWorkers() uint32 { return uint32(4 * runtime.GOMAXPROCS(0)) }

// metrics counts every RPC by method and code, with latency, in the process's default
// Prometheus registry; one set serves every gRPC server in the process (the all-in-one binary
// runs several).
var metrics = sync.OnceValue(func() *grpcprom.ServerMetrics {
	m := grpcprom.NewServerMetrics(grpcprom.WithServerHandlingTimeHistogram())
	prometheus.MustRegister(m)
	return m
})

// Serve answers on lis until ctx is done, then drains in-flight calls. Every registered method
// gets its metrics at zero first, so dashboards see a method before its first call.
func Serve(ctx context.Context, srv *grpc.Server, lis net.Listener) error {
	metrics().InitializeMetrics(srv)
	stop := context.AfterFunc(ctx, srv.GracefulStop)
	defer stop()
	if err := srv.Serve(lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return fmt.Errorf("serve %s: %w", lis.Addr(), err)
	}
	return nil
}
