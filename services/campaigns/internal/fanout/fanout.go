// Package fanout runs a campaign's send as River jobs, keeps its counters from messaging's
// events and sends its auto-replies (autoreply.go). A send is: the audience streamed from
// contacts, stored as recipients with their rendered text and price, and handed to messaging
// in the same pass as bulk batches, each message under the dedupe key
// "campaign:<id>:<contact id>" (pending; messaging holds the batches back); a billing hold for
// the sum, or the campaign fails with the reason and messaging drops the batches, nothing
// created or sent (queued; messaging lets the batches go and creates each message when it is
// due); sending; completed when every recipient is sent or failed, and the rest of the hold
// released. An A/B campaign stores its audience first, draws its samples, queues them once
// the hold is placed and the rest once a decision job has picked the winner (see abtest.go).
//
// Every step starts from what is stored, never from memory, and is safe to repeat or to run
// twice at once: recipients are keyed by (campaign, contact), the hold by the campaign's id,
// messages by their dedupe key. So a job retried, rescued after a crash, or started again by
// a resume continues where the campaign is, without a second message to anyone.
package fanout

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/chorus-sms/chorus/pkg/jobs"
	"github.com/chorus-sms/chorus/pkg/service"
	"github.com/chorus-sms/chorus/services/campaigns/internal/store"
)

// Config holds what the runner needs.
type Config struct {
	Pool   *pgxpool.Pool
	Schema string
	Store  *store.Store
	Peers  service.Peers // orgs, contacts, billing and messaging
	Logger *slog.Logger
	// AbWaitUnit is how long one minute of a campaign's abTestWaitMinutes lasts
	// (CHORUS_AB_WAIT_UNIT); 0 means a minute.
	AbWaitUnit time.Duration
}

// Runner owns the campaigns' jobs; its River client's Start and Stop are the runner's.
type Runner struct {
	*jobs.Client
	store    *store.Store
	peers    service.Peers
	log      *slog.Logger
	waitUnit time.Duration
}

// New builds the runner and its River client; Start begins working jobs.
func New(cfg Config) (*Runner, error) {
	r := &Runner{store: cfg.Store, peers: cfg.Peers, log: cfg.Logger,
		waitUnit: cmp.Or(cfg.AbWaitUnit, time.Minute)}
	var err error
	r.Client, err = jobs.NewClient("fanout", cfg.Pool, cfg.Schema, cfg.Logger, jobs.Queue(river.QueueDefault, 4), jobs.PollEvery(100*time.Millisecond),
		jobs.Work(&sendWorker{r: r}), jobs.Work(&releaseWorker{r: r}), jobs.Work(&decideWorker{r: r}), jobs.Work(&autoReplyWorker{r: r}))
	if err != nil {
		return nil, err
	}
	return r, nil
}

// StartTx queues the send of c's current submission at `at`, inside tx.
func (r *Runner) StartTx(ctx context.Context, tx pgx.Tx, c *store.Campaign, at time.Time) error {
	_, err := r.InsertTx(ctx, tx, sendArgs{CampaignID: c.ID, OrgID: c.OrgID, Submission: c.Submission}, jobs.At(at))
	if err != nil {
		return fmt.Errorf("queue campaign send: %w", err)
	}
	return nil
}

// FinishTx queues the release of what is left of c's hold, inside tx (a canceled campaign).
func (r *Runner) FinishTx(ctx context.Context, tx pgx.Tx, c *store.Campaign) error {
	return r.releaseTx(ctx, tx, c.OrgID, c.ID)
}

func (r *Runner) releaseTx(ctx context.Context, tx pgx.Tx, org, campaign uuid.UUID) error {
	if _, err := r.InsertTx(ctx, tx, releaseArgs{CampaignID: campaign, OrgID: org}, nil); err != nil {
		return fmt.Errorf("queue hold release: %w", err)
	}
	return nil
}

// sendArgs is the job of running one submission of a campaign's send. It is not unique: two
// at once (a resume while the paused one winds down) do the same work once between them.
type sendArgs struct {
	CampaignID uuid.UUID `json:"campaign_id"`
	OrgID      uuid.UUID `json:"organization_id"`
	Submission int32     `json:"submission"`
}

func (sendArgs) Kind() string { return "campaigns.send" }

// sendAttempts bounds a send that keeps failing (River's backoff: about 4 hours in all); the
// last attempt fails the campaign and releases its hold.
const sendAttempts = 10

func (sendArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{MaxAttempts: sendAttempts} }

type sendWorker struct {
	river.WorkerDefaults[sendArgs]
	r *Runner
}

func (w *sendWorker) Work(ctx context.Context, job *river.Job[sendArgs]) error {
	return w.r.work(ctx, job.Args, job.Attempt >= job.MaxAttempts)
}

// work runs the send of a in runs of jobs.RunBudget, each continuing from what the last
// stored, so that a killed process's send is rescued within a minute; the last attempt's
// failure fails the campaign (giveUp).
func (r *Runner) work(ctx context.Context, a sendArgs, lastAttempt bool) error {
	err := jobs.ResumableOrGiveUp(ctx, lastAttempt,
		func(ctx context.Context) error { return r.send(ctx, a) },
		func(ctx context.Context, cause error) error { return r.giveUp(ctx, a, cause) })
	if err != nil {
		return fmt.Errorf("campaign %s: %w", a.CampaignID, err)
	}
	return nil
}

// releaseArgs is the job of releasing what is left of a campaign's hold; unique per campaign
// since releasing twice changes nothing.
type releaseArgs struct {
	CampaignID uuid.UUID `json:"campaign_id" river:"unique"`
	OrgID      uuid.UUID `json:"organization_id"`
}

func (releaseArgs) Kind() string { return "campaigns.release_hold" }

func (releaseArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

type releaseWorker struct {
	river.WorkerDefaults[releaseArgs]
	r *Runner
}

func (w *releaseWorker) Work(ctx context.Context, job *river.Job[releaseArgs]) error {
	c, err := w.r.store.Get(ctx, job.Args.OrgID, job.Args.CampaignID)
	if err != nil {
		return fmt.Errorf("release hold of campaign %s: %w", job.Args.CampaignID, err)
	}
	if c.HeldCredits == 0 {
		return nil // nothing was held (sandbox, empty audience, never got that far)
	}
	if err := w.r.peers.Billing.ReleaseHold(ctx, c.OrgID, c.ID.String()); err != nil {
		return fmt.Errorf("release hold of campaign %s: %w", c.ID, err)
	}
	return nil
}
