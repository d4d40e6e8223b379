// Package messaging is the messaging service: sending numbers, the message log, conversations,
// carrier adapters and their webhooks, keyword handling, and short links. This is the public
// entry used by its own main and by the all-in-one binary.
package messaging

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/chorus-sms/chorus/pkg/cursor"
	"github.com/chorus-sms/chorus/pkg/envconfig"
	"github.com/chorus-sms/chorus/pkg/outbox"
	"github.com/chorus-sms/chorus/pkg/process"
	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/pkg/rpcserver"
	"github.com/chorus-sms/chorus/pkg/service"
	"github.com/chorus-sms/chorus/pkg/twilio"
	messagingv1 "github.com/chorus-sms/chorus/proto/gen/go/messaging/v1"
	"github.com/chorus-sms/chorus/services/messaging/internal/carrier"
	"github.com/chorus-sms/chorus/services/messaging/internal/dispatch"
	"github.com/chorus-sms/chorus/services/messaging/internal/inbound"
	"github.com/chorus-sms/chorus/services/messaging/internal/server"
	"github.com/chorus-sms/chorus/services/messaging/internal/store"
	"github.com/chorus-sms/chorus/services/messaging/migrations"
)

// Schema is the PostgreSQL schema the service owns.
const Schema = "messaging"

// DevCursorSecret and DevSandboxToken are the defaults of CHORUS_CURSOR_SECRET and
// CHORUS_SANDBOX_AUTH_TOKEN: fine on a laptop, wrong anywhere else.
const (
	DevCursorSecret = "chorus-dev-cursor-secret"
	DevSandboxToken = "chorus-dev-sandbox-token"
)

// Provider names accepted by CHORUS_SMS_PROVIDER.
const (
	ProviderSandbox = "sandbox"
	ProviderTwilio  = "twilio"
)

// DefaultWorkers is how many queued messages are dispatched at once by default. The jobs running
// at once share each dispatch step's round trip (dispatch/batches.go), so a worker costs a
// goroutine, not a connection, and what each statement serves grows with the workers: at a
// few dozen, every step is a round trip for two or three messages and a campaign is sent at a
// fraction of what the same machine serves at a few hundred.
const DefaultWorkers = 500

// def is the messaging service: its registry row, its schema, its Redis (outbox stream,
// per-number throttles, contacts' event stream) and its pool. The pool's default size
// (CHORUS_DB_MAX_CONNS, 40) covers the batched dispatch steps (two runs of each at once),
// River's own (its LISTEN connection, fetching, completing, leader election), sandbox reports
// and the reconcile sweep, the outbox relay and consumer, and headroom for gRPC calls. It does
// not grow with the workers, which share connections.
var def = service.Def{Service: registry.Messaging, Layout: service.Layout{
	Schema: Schema, Migrations: migrations.FS, With: migrations.With, Redis: true, DefaultConns: 40,
}}

// Config is the messaging process configuration.
type Config struct {
	service.Storage // CHORUS_DATABASE_URL, CHORUS_REDIS_URL, CHORUS_DB_MAX_CONNS
	// PublicURL is the gateway's public base URL (CHORUS_PUBLIC_URL): carriers sign webhooks
	// against it, status callbacks and default short links are built on it.
	PublicURL    string
	CursorSecret string // CHORUS_CURSOR_SECRET: signs message-page cursors
	// Provider is the carrier of non-sandbox organizations (CHORUS_SMS_PROVIDER): "sandbox"
	// (default) or "twilio". Sandbox organizations always use the sandbox.
	Provider string
	// Twilio is read from CHORUS_TWILIO_ACCOUNT_SID and CHORUS_TWILIO_AUTH_TOKEN (required with
	// the twilio provider) and CHORUS_TWILIO_API_URL.
	Twilio twilio.Config
	// SandboxToken signs the sandbox carrier's webhooks (CHORUS_SANDBOX_AUTH_TOKEN).
	SandboxToken string
	// NumberRate is how many messages one sending number may dispatch per second
	// (CHORUS_NUMBER_RATE).
	NumberRate int
	// Workers is how many queued messages are dispatched at once (CHORUS_DISPATCH_WORKERS).
	Workers int
	// SandboxDelay is how long the sandbox carrier waits before reporting an outcome
	// (CHORUS_SANDBOX_DELAY).
	SandboxDelay time.Duration
	// SendingTimeout is how long an outgoing message may stay "sending" (claimed, carrier's
	// answer not recorded, no status callback, the carrier unable to say when asked) before it
	// is failed with CARRIER_OUTCOME_UNKNOWN and its credits returned
	// (CHORUS_SENDING_TIMEOUT). Keep it well above twice CallTimeout, or messages are failed
	// before the carrier is asked.
	SendingTimeout time.Duration
	// CallTimeout bounds one hand-off to the carrier (CHORUS_CARRIER_CALL_TIMEOUT); a message
	// still "sending" twice that long after its claim (its process died, or the carrier's
	// answer was lost) is looked up at the carrier: recorded sent if the carrier has it,
	// queued again if not. Keep SendingTimeout well above twice it.
	CallTimeout time.Duration
	// Wiring: orgs, contacts and billing (registry.Messaging.Needs), the logger.
	process.Wiring
}

// ConfigFromEnv reads the service's own CHORUS_* variables; Setup adds its peers'.
func ConfigFromEnv(r *envconfig.Reader) Config {
	cfg := Config{
		Storage:        def.StorageFromEnv(r),
		PublicURL:      r.URL("CHORUS_PUBLIC_URL", "http://"+registry.Gateway.Addr),
		CursorSecret:   r.Secret("CHORUS_CURSOR_SECRET", DevCursorSecret),
		Provider:       r.OneOf("CHORUS_SMS_PROVIDER", ProviderSandbox, ProviderSandbox, ProviderTwilio),
		Twilio:         twilio.Config{BaseURL: r.URL("CHORUS_TWILIO_API_URL", "https://api.twilio.com")},
		SandboxToken:   r.Secret("CHORUS_SANDBOX_AUTH_TOKEN", DevSandboxToken),
		NumberRate:     r.Int("CHORUS_NUMBER_RATE", 10, 1),
		Workers:        r.Int("CHORUS_DISPATCH_WORKERS", DefaultWorkers, 1),
		SandboxDelay:   r.DurationOrZero("CHORUS_SANDBOX_DELAY", 300*time.Millisecond),
		SendingTimeout: r.Duration("CHORUS_SENDING_TIMEOUT", time.Hour),
		CallTimeout:    r.Duration("CHORUS_CARRIER_CALL_TIMEOUT", dispatch.DefaultCallTimeout),
	}
	if cfg.Provider == ProviderTwilio {
		cfg.Twilio.AccountSID = r.Secret("CHORUS_TWILIO_ACCOUNT_SID", "")
		cfg.Twilio.AuthToken = r.Secret("CHORUS_TWILIO_AUTH_TOKEN", "")
	}
	return cfg
}

// Setup reads the process's variables for process.Main: where it listens and how to build it.
var Setup = process.SetupFor(def.Service, ConfigFromEnv, New)

// New connects, migrates, and builds the service: it dispatches queued messages, publishes and
// consumes events, and answers gRPC. Its Close lets running dispatches finish (bounded).
func New(ctx context.Context, cfg Config) (service.Server, error) {
	if cfg.CursorSecret == "" || cfg.SandboxToken == "" {
		return service.Server{}, errors.New("messaging: CHORUS_CURSOR_SECRET and CHORUS_SANDBOX_AUTH_TOKEN must not be empty")
	}
	if cfg.Provider == ProviderTwilio {
		// Whoever knows a default sandbox token could sign webhooks, and a default cursor secret
		// forge cursors, on a process that speaks for real numbers.
		if err := errors.Join(envconfig.NotDefault("CHORUS_CURSOR_SECRET", cfg.CursorSecret, DevCursorSecret),
			envconfig.NotDefault("CHORUS_SANDBOX_AUTH_TOKEN", cfg.SandboxToken, DevSandboxToken)); err != nil {
			return service.Server{}, fmt.Errorf("messaging: %w", err)
		}
	}
	var live carrier.Provider
	if cfg.Provider == ProviderTwilio {
		t, err := carrier.NewTwilio(cfg.Twilio)
		if err != nil {
			return service.Server{}, fmt.Errorf("messaging: %w", err)
		}
		live = t
	}
	// Carriers sign the exact URL; a trailing slash would double the one every path starts with.
	cfg.PublicURL = strings.TrimRight(cfg.PublicURL, "/")
	return def.Build(ctx, cfg.Storage, cfg.Wiring, func(sh *service.Shell) error {
		st := store.New(sh.Pool)
		dispatcher, err := dispatch.New(dispatch.Config{
			Pool:           sh.Pool,
			Schema:         Schema,
			Store:          st,
			Contacts:       sh.Peers.Contacts,
			Orgs:           sh.Peers.Orgs,
			Billing:        sh.Peers.Billing,
			Redis:          sh.Redis,
			Live:           live,
			PublicURL:      cfg.PublicURL,
			NumberRate:     cfg.NumberRate,
			Workers:        cmp.Or(cfg.Workers, DefaultWorkers),
			SandboxDelay:   cfg.SandboxDelay,
			SendingTimeout: cfg.SendingTimeout,
			CallTimeout:    cfg.CallTimeout,
			Logger:         sh.Log,
		})
		if err != nil {
			return err
		}
		sh.Starts("dispatch", dispatcher)
		tokens := map[string]string{ProviderSandbox: cfg.SandboxToken}
		if cfg.Provider == ProviderTwilio {
			tokens[ProviderTwilio] = cfg.Twilio.AuthToken
		}
		in := inbound.New(st, sh.Peers.Orgs, sh.Peers.Contacts, dispatcher, sh.Redis, sh.Log)
		sh.GRPC = rpcserver.New(sh.Log, server.UnscopedMethods...)
		messagingv1.RegisterMessagingServiceServer(sh.GRPC, server.New(server.Config{
			Store:     st,
			Orgs:      sh.Peers.Orgs,
			Contacts:  sh.Peers.Contacts,
			Billing:   sh.Peers.Billing,
			Dispatch:  dispatcher,
			Inbound:   in,
			Cursors:   cursor.New(cfg.CursorSecret),
			PublicURL: cfg.PublicURL,
			Tokens:    tokens,
		}))
		sh.Run(outbox.NewRelay(sh.Pool, sh.Redis, outbox.StreamName(Schema), outbox.WithLogger(sh.Log)).Run,
			outbox.NewConsumer(sh.Pool, sh.Redis, outbox.StreamName("contacts"), sh.Name, outbox.MemberName(), inbound.ContactDeletedHandler(st), outbox.WithTypes(inbound.ContactDeleted), outbox.WithLogger(sh.Log)).Run)
		return nil
	})
}
