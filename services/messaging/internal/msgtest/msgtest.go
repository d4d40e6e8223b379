// Package msgtest starts what messaging's package tests talk to: in-process fakes of the orgs
// and contacts services (gRPC servers on loopback ports, holding what messaging asks of them
// in memory), a database and a Redis of the test's own, and messaging itself when a test goes
// through its gRPC API. Only tests import it.
package msgtest

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/chorus-sms/chorus/pkg/pgdb"
	"github.com/chorus-sms/chorus/pkg/pgtest"
	"github.com/chorus-sms/chorus/pkg/phone"
	"github.com/chorus-sms/chorus/pkg/process"
	"github.com/chorus-sms/chorus/pkg/redistest"
	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/pkg/rpcserver"
	"github.com/chorus-sms/chorus/pkg/servetest"
	"github.com/chorus-sms/chorus/pkg/service"
	"github.com/chorus-sms/chorus/pkg/tenant"
	"github.com/chorus-sms/chorus/pkg/twilio"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
	messagingv1 "github.com/chorus-sms/chorus/proto/gen/go/messaging/v1"
	orgsv1 "github.com/chorus-sms/chorus/proto/gen/go/orgs/v1"
	"github.com/chorus-sms/chorus/services/messaging"
	"github.com/chorus-sms/chorus/services/messaging/migrations"
)

// Peers are fakes of orgs and contacts, and a fresh database and Redis for messaging.
type Peers struct {
	DSN string
	// RedisURL is a Redis database of the test's own (pkg/redistest): callers of StartPeers
	// need a TestMain that calls redistest.Close.
	RedisURL               string
	OrgsAddr, ContactsAddr string

	orgs     *fakeOrgs
	contacts *fakeContacts
}

// StartPeers runs the fakes of orgs and contacts for the rest of the test.
func StartPeers(t *testing.T) *Peers {
	t.Helper()
	p := &Peers{
		DSN:      pgtest.NewDatabase(t),
		orgs:     &fakeOrgs{orgs: map[string]*orgsv1.Organization{}},
		contacts: &fakeContacts{contacts: map[contactKey]*contact{}},
	}
	p.RedisURL, _ = redistest.New(t)
	p.OrgsAddr = serve(t, func(s *grpc.Server) { orgsv1.RegisterOrgsServiceServer(s, p.orgs) })
	p.ContactsAddr = serve(t, func(s *grpc.Server) { contactsv1.RegisterContactsServiceServer(s, p.contacts) })
	return p
}

// serve runs a gRPC server with the interceptors every service has (tenancy, errors) and what
// register adds on a loopback port, and returns its address.
func serve(t *testing.T, register func(*grpc.Server)) string {
	t.Helper()
	srv := rpcserver.New(Quiet())
	register(srv)
	return servetest.Serve(t, fakeServer{srv}).Target()
}

// fakeServer serves a server of fakes as a service's is served.
type fakeServer struct{ srv *grpc.Server }

func (f fakeServer) Serve(ctx context.Context, lis net.Listener) error {
	return rpcserver.Serve(ctx, f.srv, lis)
}

func (f fakeServer) Close() { f.srv.Stop() }

// Org creates an organization (sandbox or not) and returns its id.
func (p *Peers) Org(t *testing.T, name string, sandbox bool) uuid.UUID {
	t.Helper()
	return p.orgs.add(name, sandbox)
}

// As returns ctx calling as a writer of org.
func As(ctx context.Context, org uuid.UUID) context.Context {
	return tenant.AppendToOutgoing(ctx, tenant.Principal{OrgID: org, User: "test-user", Access: tenant.AccessWrite})
}

// Contact gives org an opted-in, textable contact with number.
func (p *Peers) Contact(t *testing.T, org uuid.UUID, number string) {
	t.Helper()
	e164, err := phone.Normalize(number)
	require.NoError(t, err)
	p.contacts.add(org, e164)
}

// Consent returns whether org's contact with number is opted in; found is false when org has
// no contact with it.
func (p *Peers) Consent(t *testing.T, org uuid.UUID, number string) (optedIn, found bool) {
	t.Helper()
	e164, err := phone.Normalize(number)
	require.NoError(t, err)
	return p.contacts.consent(org, e164)
}

// MessagingDB opens the messaging schema of the peers' database, migrated, for reading what
// a test recorded.
func (p *Peers) MessagingDB(t *testing.T) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	pool, err := pgdb.Open(ctx, p.DSN, messaging.Schema)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	require.NoError(t, pgdb.Migrate(ctx, pool, messaging.Schema, migrations.FS, migrations.With...))
	return pool
}

// Quiet is a logger that writes nothing.
func Quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// Tokens the messaging service of Messaging signs webhooks with.
const (
	SandboxToken = "sandbox-test-token"
	TwilioToken  = "twilio-test-token"
	// PublicURL is the base URL carriers sign webhooks against.
	PublicURL = "https://chorus.test"
)

// Messaging runs the messaging service against p for the rest of the test, with Twilio (at
// twilioURL, a fake of its API) as the carrier of organizations that are not sandboxes.
func (p *Peers) Messaging(t *testing.T, twilioURL string) messagingv1.MessagingServiceClient {
	t.Helper()
	svc, err := messaging.New(context.Background(), messaging.Config{
		Storage: service.Storage{DatabaseURL: p.DSN, RedisURL: p.RedisURL}, PublicURL: PublicURL, CursorSecret: "cursor-test-secret",
		Provider: messaging.ProviderTwilio, SandboxToken: SandboxToken,
		Twilio:     twilio.Config{AccountSID: "ACtest", AuthToken: TwilioToken, BaseURL: twilioURL},
		NumberRate: 100, Workers: 2, SandboxDelay: 10 * time.Millisecond, SendingTimeout: time.Hour,
		Wiring: process.Wiring{Logger: Quiet(), Peers: registry.Peers{
			registry.Orgs.Name: p.OrgsAddr, registry.Contacts.Name: p.ContactsAddr, registry.Billing.Name: servetest.ClosedAddr(t),
		}},
	})
	require.NoError(t, err)
	return messagingv1.NewMessagingServiceClient(servetest.Serve(t, svc))
}
