// Package dispatch sends outgoing messages through the carriers: replies at once, queued
// messages (campaigns, polls, keyword confirmations) from River jobs, each number paced by a
// Redis throttle. It also applies carrier status callbacks, moving statuses only forward and
// settling each message's credits exactly once.
//
// A message's life: queued → sending (claimed; committed before the carrier is called) →
// sent (carrier accepted; credits consumed) → delivered | undelivered | failed. A send whose
// answer is lost (or whose process died) stays "sending" and is never resent blindly: the
// carrier's status callback, which carries our message id, settles it, and once no call for
// it can still reach the carrier the carrier is asked (reconcile.go): a message it has is
// recorded sent, one it does not have goes back to the queue. One the carrier cannot answer
// about until the sending timeout is failed (CARRIER_OUTCOME_UNKNOWN) with its credits
// returned, and a later callback changes nothing; a settle that billing refused is repeated
// by the same sweep.
package dispatch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/riverqueue/river"

	"github.com/chorus-sms/chorus/pkg/clients/billing"
	"github.com/chorus-sms/chorus/pkg/clients/contacts"
	"github.com/chorus-sms/chorus/pkg/clients/orgs"
	"github.com/chorus-sms/chorus/pkg/jobs"
	"github.com/chorus-sms/chorus/services/messaging/internal/carrier"
	"github.com/chorus-sms/chorus/services/messaging/internal/store"
)

// Config holds what the dispatcher needs.
type Config struct {
	Pool     *pgxpool.Pool
	Schema   string
	Store    *store.Store
	Contacts *contacts.Client
	// Orgs answers an organization's frequency cap.
	Orgs    *orgs.Client
	Billing *billing.Client
	Redis   *redis.Client
	// Live is the carrier of non-sandbox organizations; nil means the sandbox for everyone.
	Live         carrier.Provider
	PublicURL    string
	NumberRate   int
	Workers      int
	SandboxDelay time.Duration
	// SendingTimeout is how long a message may stay "sending" before it is failed with
	// CodeOutcomeUnknown and its credits returned; it must be positive.
	SendingTimeout time.Duration
	// CallTimeout bounds one hand-off to the carrier (DefaultCallTimeout when zero); a message
	// still "sending" twice that long after its claim is looked up at the carrier (reconcile.go).
	CallTimeout time.Duration
	Logger      *slog.Logger
}

// Dispatcher sends messages and applies their status callbacks.
type Dispatcher struct {
	river    *jobs.Client
	pool     *pgxpool.Pool
	store    *store.Store
	contacts *contacts.Client
	orgs     *orgs.Client
	billing  *billing.Client
	throttle *throttle
	batches  batches
	// inGroups bounds the messages of group jobs being dispatched at once (groups.go).
	inGroups  chan struct{}
	rate      int
	live      carrier.Provider
	sandbox   carrier.Sandbox
	publicURL string
	delay     time.Duration
	// callTimeout bounds each hand-off to the carrier; see lookupAfter.
	callTimeout time.Duration
	log         *slog.Logger
	// expandWake wakes the bulk expander (bulk.go); stopExpander ends it and expanderDone
	// closes when it has.
	expandWake   chan struct{}
	stopExpander context.CancelFunc
	expanderDone chan struct{}
}

// RateOf is the rate, in messages per second, of a number whose own rate is mps (0: none of
// its own, so the default, CHORUS_NUMBER_RATE).
func (d *Dispatcher) RateOf(mps int) int {
	if mps > 0 {
		return mps
	}
	return d.rate
}

// New builds the dispatcher and its River client; Start begins working queued messages.
func New(cfg Config) (*Dispatcher, error) {
	if cfg.SendingTimeout <= 0 {
		return nil, fmt.Errorf("dispatch: sending timeout must be positive, got %s", cfg.SendingTimeout)
	}
	if cfg.CallTimeout < 0 {
		return nil, fmt.Errorf("dispatch: carrier call timeout must not be negative, got %s", cfg.CallTimeout)
	}
	d := &Dispatcher{
		pool:        cfg.Pool,
		store:       cfg.Store,
		contacts:    cfg.Contacts,
		orgs:        cfg.Orgs,
		billing:     cfg.Billing,
		throttle:    newThrottle(cfg.Redis),
		rate:        cfg.NumberRate,
		live:        cfg.Live,
		publicURL:   cfg.PublicURL,
		delay:       cfg.SandboxDelay,
		callTimeout: cmp.Or(cfg.CallTimeout, DefaultCallTimeout),
		log:         cfg.Logger,
		expandWake:  make(chan struct{}, 1),
		inGroups:    make(chan struct{}, max(cfg.Workers, 1)),
	}
	d.batches = newBatches(d)
	client, err := jobs.NewClient("dispatch", cfg.Pool, cfg.Schema, cfg.Logger, jobs.PollEvery(100*time.Millisecond),
		jobs.Queue(river.QueueDefault, cfg.Workers), jobs.Queue(queueGroups, groupWorkers(cfg.Workers)),
		jobs.Queue(queueSandbox, 10), jobs.Queue(queueReconcile, 1),
		jobs.Periodic(reconcilePeriodicJob(cfg.SendingTimeout, d.lookupAfter())),
		jobs.Work(&sendWorker{d: d}), jobs.Work(&sendGroupWorker{d: d}), jobs.Work(&reportWorker{d: d}),
		jobs.Work(&reconcileWorker{d: d, timeout: cfg.SendingTimeout}))
	if err != nil {
		return nil, err
	}
	d.river = client
	return d, nil
}

// queueSandbox keeps the sandbox carrier's reports from waiting behind queued sends.
const queueSandbox = "sandbox"

// Start begins working jobs and expanding bulk batches; jobs run under a context Start's ctx
// does not cancel, so that Stop can let them finish.
func (d *Dispatcher) Start(ctx context.Context) error {
	if err := d.river.Start(ctx); err != nil {
		return err
	}
	ectx, cancel := context.WithCancel(ctx)
	d.stopExpander, d.expanderDone = cancel, make(chan struct{})
	go func() {
		defer close(d.expanderDone)
		d.expandLoop(ectx)
	}()
	return nil
}

// Stop stops expanding bulk batches, lets running jobs finish (up to the soft stop timeout)
// and stops.
func (d *Dispatcher) Stop(ctx context.Context) error {
	if d.stopExpander != nil {
		d.stopExpander()
		<-d.expanderDone
	}
	return d.river.Stop(ctx)
}

// QueueTx queues the dispatch of messages just stored inside tx, so they are sent only if tx
// commits. Each gets one job, copied in with the others in one COPY.
func (d *Dispatcher) QueueTx(ctx context.Context, tx pgx.Tx, org uuid.UUID, ids ...uuid.UUID) error {
	params := make([]river.InsertManyParams, len(ids))
	for i, id := range ids {
		params[i] = river.InsertManyParams{Args: sendArgs{MessageID: id, OrgID: org}}
	}
	return d.insertSends(ctx, tx, params)
}

// insertSends copies dispatch jobs in, inside tx.
func (d *Dispatcher) insertSends(ctx context.Context, tx pgx.Tx, params []river.InsertManyParams) error {
	if len(params) == 0 {
		return nil
	}
	if _, err := d.river.InsertManyFastTx(ctx, tx, params); err != nil {
		return fmt.Errorf("queue dispatch: %w", err)
	}
	return nil
}

// ProviderFor returns the carrier an organization's messages go through.
func (d *Dispatcher) ProviderFor(sandboxOrg bool) carrier.Provider {
	if sandboxOrg || d.live == nil {
		return d.sandbox
	}
	return d.live
}

// statusCallbackURL is the carrier's status callback for message id.
func (d *Dispatcher) statusCallbackURL(provider string, id uuid.UUID) string {
	return d.publicURL + "/webhooks/" + provider + "/status?" + url.Values{"messageId": {id.String()}}.Encode()
}

// provider returns the adapter named on a stored message.
func (d *Dispatcher) provider(name string) (carrier.Provider, error) {
	if name == carrier.SandboxName {
		return d.sandbox, nil
	}
	if d.live != nil && d.live.Name() == name {
		return d.live, nil
	}
	return nil, fmt.Errorf("no carrier %q is configured", name)
}

// ErrUnknownMessage is returned for a status callback of a message we do not have.
var ErrUnknownMessage = errors.New("unknown message")
