// Package servetest runs a built service on a loopback port for a test and hands back a real
// gRPC connection to it.
package servetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/chorus-sms/chorus/pkg/process"
)

// Serve serves srv on a fresh 127.0.0.1 port for the rest of the test and returns a gRPC
// connection to it. At cleanup it stops the server, checks Serve returned cleanly, and closes it.
func Serve(t testing.TB, srv process.Server) *grpc.ClientConn {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("servetest: listen: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("servetest: dial %s: %v", lis.Addr(), err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("servetest: serve: %v", err)
		}
		srv.Close()
	})
	return conn
}

// ClosedAddr is a loopback address nothing listens on: a peer that is down, or a port a test
// hands to a process it starts itself. The port lies below the kernel's ephemeral range
// (32768 and up by default), where the ports of outgoing connections and of listeners on
// port 0 come from: a port of that range freed here could be taken by one of the test's own
// connections before the started process binds it ("address already in use"). No port is
// handed out twice in a process.
func ClosedAddr(t testing.TB) string {
	t.Helper()
	closedMu.Lock()
	defer closedMu.Unlock()
	for range 1000 {
		port := closedPortFirst + rand.IntN(closedPortCount)
		if closedTaken[port] {
			continue
		}
		lis, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue // in use
		}
		addr := lis.Addr().String()
		if err := lis.Close(); err != nil {
			t.Fatalf("servetest: close: %v", err)
		}
		closedTaken[port] = true
		return addr
	}
	t.Fatalf("servetest: no free port in %d-%d", closedPortFirst, closedPortFirst+closedPortCount-1)
	return ""
}

// The ports ClosedAddr picks from, and those it handed out.
const (
	closedPortFirst = 20000
	closedPortCount = 12000
)

var (
	closedMu    sync.Mutex
	closedTaken = map[int]bool{}
)
