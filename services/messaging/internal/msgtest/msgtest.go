// Package msgtest starts what messaging's package tests talk to: the real orgs and contacts
// services on loopback ports, each test on its own database, and messaging itself when a test
// goes through its gRPC API. Only tests import it.
package msgtest

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/chorus-sms/chorus/pkg/pgdb"
	"github.com/chorus-sms/chorus/pkg/pgtest"
	"github.com/chorus-sms/chorus/pkg/process"
	"github.com/chorus-sms/chorus/pkg/redistest"
	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/pkg/servetest"
	"github.com/chorus-sms/chorus/pkg/tenant"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
	messagingv1 "github.com/chorus-sms/chorus/proto/gen/go/messaging/v1"
	orgsv1 "github.com/chorus-sms/chorus/proto/gen/go/orgs/v1"
	"github.com/chorus-sms/chorus/services/contacts"
	"github.com/chorus-sms/chorus/services/messaging"
	"github.com/chorus-sms/chorus/services/messaging/internal/carrier"
	"github.com/chorus-sms/chorus/services/messaging/migrations"
	"github.com/chorus-sms/chorus/services/orgs"
)

// Peers are running orgs and contacts services on one fresh database.
type Peers struct {
	DSN string
	// RedisURL is a Redis database of the test's own (pkg/redistest): callers of StartPeers
	// need a TestMain that calls redistest.Close.
	RedisURL               string
	OrgsAddr, ContactsAddr string
	Orgs                   orgsv1.OrgsServiceClient
	Contacts               contactsv1.ContactsServiceClient
}

// StartPeers runs orgs and contacts for the rest of the test.
func StartPeers(t *testing.T) *Peers {
	t.Helper()
	ctx := context.Background()
	p := &Peers{DSN: pgtest.NewDatabase(t)}
	p.RedisURL, _ = redistest.New(t)
	o, err := orgs.New(ctx, orgs.Config{DatabaseURL: p.DSN, RedisURL: p.RedisURL, Wiring: process.Wiring{Logger: Quiet()}})
	require.NoError(t, err)
	p.OrgsAddr, p.Orgs = serve(t, o, orgsv1.NewOrgsServiceClient)
	c, err := contacts.New(ctx, contacts.Config{DatabaseURL: p.DSN, RedisURL: p.RedisURL, CursorSecret: "test-secret", LookupProvider: "sandbox", Wiring: process.Wiring{Logger: Quiet()}})
	require.NoError(t, err)
	p.ContactsAddr, p.Contacts = serve(t, c, contactsv1.NewContactsServiceClient)
	return p
}

// serve runs srv on a loopback port and returns its address and a client of it.
func serve[C any](t *testing.T, srv process.Server, client func(cc grpc.ClientConnInterface) C) (string, C) {
	t.Helper()
	conn := servetest.Serve(t, srv)
	return conn.Target(), client(conn)
}

// Org creates an organization (sandbox or not) and returns its id.
func (p *Peers) Org(t *testing.T, name string, sandbox bool) uuid.UUID {
	t.Helper()
	res, err := p.Orgs.CreateOrganization(context.Background(), &orgsv1.CreateOrganizationRequest{Name: name, Sandbox: sandbox})
	require.NoError(t, err)
	return uuid.MustParse(res.GetOrganization().GetId())
}

// As returns ctx calling as a writer of org.
func As(ctx context.Context, org uuid.UUID) context.Context {
	return tenant.AppendToOutgoing(ctx, tenant.Principal{OrgID: org, User: "test-user", Access: tenant.AccessWrite})
}

// Contact gives org an opted-in contact with phone.
func (p *Peers) Contact(t *testing.T, org uuid.UUID, phone string) {
	t.Helper()
	_, err := p.Contacts.CreateContact(As(context.Background(), org), &contactsv1.CreateContactRequest{Phone: &phone})
	require.NoError(t, err)
}

// Consent returns whether org's contact with phone is opted in; found is false when org has
// no contact with it.
func (p *Peers) Consent(t *testing.T, org uuid.UUID, phone string) (optedIn, found bool) {
	t.Helper()
	res, err := p.Contacts.CheckSendable(As(context.Background(), org), &contactsv1.CheckSendableRequest{Phones: []string{phone}})
	require.NoError(t, err)
	r := res.GetResults()[0]
	return r.GetReason() != contactsv1.SendableReason_SENDABLE_REASON_OPTED_OUT, r.GetContactId() != ""
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
		DatabaseURL: p.DSN, RedisURL: p.RedisURL, PublicURL: PublicURL, CursorSecret: "cursor-test-secret",
		Provider: messaging.ProviderTwilio, SandboxToken: SandboxToken,
		Twilio:     carrier.TwilioConfig{AccountSID: "ACtest", AuthToken: TwilioToken, BaseURL: twilioURL},
		NumberRate: 100, Workers: 2, SandboxDelay: 10 * time.Millisecond, SendingTimeout: time.Hour,
		Wiring: process.Wiring{Logger: Quiet(), Peers: registry.Peers{
			registry.Orgs.Name: p.OrgsAddr, registry.Contacts.Name: p.ContactsAddr, registry.Billing.Name: servetest.ClosedAddr(t),
		}},
	})
	require.NoError(t, err)
	return messagingv1.NewMessagingServiceClient(servetest.Serve(t, svc))
}
