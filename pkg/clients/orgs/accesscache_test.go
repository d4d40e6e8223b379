package orgs

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/chorus-sms/chorus/pkg/clients"
	"github.com/chorus-sms/chorus/pkg/redistest"
	"github.com/chorus-sms/chorus/pkg/tenant"
	orgsv1 "github.com/chorus-sms/chorus/proto/gen/go/orgs/v1"
)

func TestMain(m *testing.M) {
	code := m.Run()
	redistest.Close()
	os.Exit(code)
}

// fakeOrgs answers CheckAccess with level, each answer waiting for gate while it is set.
type fakeOrgs struct {
	orgsv1.UnimplementedOrgsServiceServer
	mu    sync.Mutex
	level orgsv1.Access
	gate  chan struct{}
	calls int
}

func (f *fakeOrgs) CheckAccess(ctx context.Context, _ *orgsv1.CheckAccessRequest) (*orgsv1.CheckAccessResponse, error) {
	f.mu.Lock()
	f.calls++
	gate := f.gate
	f.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return &orgsv1.CheckAccessResponse{Access: f.level}, nil
}

func (f *fakeOrgs) set(level orgsv1.Access, gate chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.level, f.gate = level, gate
}

func (f *fakeOrgs) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func newCache(t *testing.T, fake *fakeOrgs) *AccessCache {
	t.Helper()
	srv := grpc.NewServer()
	orgsv1.RegisterOrgsServiceServer(srv, fake)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	conn, err := clients.Dial("orgs", lis.Addr().String(), "test")
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	_, rdb := redistest.New(t)
	c := NewAccessCache(New(conn), rdb, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return c
}

// A user who keeps calling is answered from memory while the entry is checked again in the
// background, and a change the orgs service did not announce still shows within the entry's
// lifetime.
func TestAccessIsCheckedAgainBeforeItExpires(t *testing.T) {
	t.Parallel()
	fake := &fakeOrgs{level: orgsv1.Access_ACCESS_WRITE}
	c := newCache(t, fake)
	org := uuid.New()
	access := func() (tenant.Access, error) { return c.Access(context.Background(), org, "alice") }

	// Served from memory once the subscription is proven current.
	require.Eventually(t, func() bool {
		before := fake.count()
		level, err := access()
		return err == nil && level == tenant.AccessWrite && fake.count() == before
	}, 5*time.Second, 20*time.Millisecond)
	before := fake.count()

	// Past the refresh point the entry is still served, while orgs is asked again, and does not
	// answer yet.
	gate := make(chan struct{})
	fake.set(orgsv1.Access_ACCESS_UNSPECIFIED, gate)
	time.Sleep(accessRefreshAfter)
	type answer struct {
		level tenant.Access
		err   error
	}
	got := make(chan answer, 1)
	go func() {
		level, err := access()
		got <- answer{level, err}
	}()
	select {
	case a := <-got:
		require.NoError(t, a.err)
		require.Equal(t, tenant.AccessWrite, a.level)
	case <-time.After(10 * time.Second):
		t.Fatal("the check waited for orgs while its entry was still fresh")
	}
	require.Eventually(t, func() bool { return fake.count() > before }, 5*time.Second, 10*time.Millisecond,
		"orgs is asked again in the background")

	// Once orgs answers, the lowered level is what the cache serves.
	close(gate)
	require.Eventually(t, func() bool {
		level, err := access()
		return err == nil && level == tenant.AccessNone
	}, accessEntryTTL+time.Second, 10*time.Millisecond)
}
