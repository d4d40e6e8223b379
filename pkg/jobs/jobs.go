// Package jobs holds the River setup services share: the client (its bounds, its queues and
// workers given as options, its start and stop, which a service's job runner gets by
// embedding it), jobs that work in runs (Resumable), and sweeps, the periodic jobs that look
// for due work (stuck messages, ended billing periods) with one replica working each one.
package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"
)

// Sweep schedules args every interval and once as soon as the client is elected leader, so a
// restart catches up at once. River inserts periodic jobs from its elected leader only, so
// whatever the number of replicas, one of them works each sweep.
func Sweep(interval time.Duration, args river.JobArgs) *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(interval),
		func() (river.JobArgs, *river.InsertOpts) { return args, nil },
		&river.PeriodicJobOpts{ID: args.Kind(), RunOnStart: true})
}

// SweepInsertOpts puts a sweep in queue (its own, with one worker, so sweeps never wait behind
// other jobs), skips it while another is still waiting or running, and never retries one that
// failed: the next sweep does its work. A sweep's args return it from InsertOpts.
func SweepInsertOpts(queue string) river.InsertOpts {
	return river.InsertOpts{
		Queue:       queue,
		MaxAttempts: 1,
		UniqueOpts: river.UniqueOpts{ByState: []rivertype.JobState{
			rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning, rivertype.JobStateScheduled,
		}},
	}
}

// StopTimeout is how long Stop lets running jobs finish before it cancels them.
const StopTimeout = 10 * time.Second

// JobTimeout is how long one run of a job may take before its context is canceled, unless
// the worker sets another. Keep every worker's below
// RescueAfter; a job that can take longer works in runs of RunBudget (Resumable).
const JobTimeout = 30 * time.Second

// RescueAfter is how long a job may stay running before River takes it for lost (its process
// died) and runs it again. It is above every job's timeout, so a job still working (its
// context canceled at its timeout, returning) is never run a second time beside itself. River's rescuer looks every 30 s, so a killed
// process's jobs run again 40 to 70 s after their run started; River's own default, an hour,
// would stall a campaign that long after a crash (and sweeps, unique while "running").
const RescueAfter = 40 * time.Second

// RunBudget is how long one run of a Resumable job works before it hands over to its next.
const RunBudget = 25 * time.Second

// Resumable runs work, a job that may take longer than JobTimeout, under RunBudget: when the
// budget ends the run while the job's own context is live, the job is snoozed to run again at
// once, which uses none of its attempts. work must resume from what it stored (as every job
// must, since jobs run at least once). So no run outlives its timeout, and a job whose process
// died is rescued after RescueAfter however long the whole job is.
func Resumable(ctx context.Context, work func(context.Context) error) error {
	return resumable(ctx, RunBudget, work)
}

func resumable(ctx context.Context, budget time.Duration, work func(context.Context) error) error {
	runCtx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	err := work(runCtx)
	if err != nil && runCtx.Err() != nil && ctx.Err() == nil {
		return river.JobSnooze(0)
	}
	return err
}

// GiveUpTimeout bounds a job's giving up after its last attempt failed: the run's budget and
// the give-up together stay below RescueAfter, so the job is never run again beside itself.
const GiveUpTimeout = 10 * time.Second

// ResumableOrGiveUp runs work as Resumable does, for a job whose end must be recorded even when
// it keeps failing: when the job's last attempt fails (a run the budget ended did not fail; it
// uses no attempt), giveUp records it with the cause, under a context of its own bounded by
// GiveUpTimeout (the job's own deadline may be what failed the run), and answers for the job.
func ResumableOrGiveUp(ctx context.Context, lastAttempt bool, work func(context.Context) error, giveUp func(ctx context.Context, cause error) error) error {
	return resumableOrGiveUp(ctx, RunBudget, lastAttempt, work, giveUp)
}

func resumableOrGiveUp(ctx context.Context, budget time.Duration, lastAttempt bool, work func(context.Context) error, giveUp func(context.Context, error) error) error {
	err := resumable(ctx, budget, work)
	var snoozed *river.JobSnoozeError
	if err == nil || !lastAttempt || errors.As(err, &snoozed) {
		return err
	}
	gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), GiveUpTimeout)
	defer cancel()
	return giveUp(gctx, err)
}

// At are the insert options of a job that is to run at `at`: scheduled when at lies ahead,
// available at once otherwise. River inserts a job given any ScheduledAt as scheduled, even
// one already past, and such a job waits for the leader's next scheduler pass (every 5 s): an
// immediate campaign started up to 5 s after its submit.
func At(at time.Time) *river.InsertOpts {
	if at.After(time.Now()) {
		return &river.InsertOpts{ScheduledAt: at}
	}
	return nil
}

// FetchCooldown is the least time between two fetches of one queue. A fetch takes at most the
// queue's free workers, so River's default (100 ms) caps a queue of n workers at 10n short
// jobs a second, whatever the machine could do: 20 workers, 200 messages a second.
const FetchCooldown = 20 * time.Millisecond

// Client is a service's River client in its own schema. A service's job runner embeds it, so
// the Start and Stop that service.Shell.Starts takes come with it. Start works jobs under a
// context the caller's cancellation does not reach, so that Stop can let running jobs finish.
type Client struct {
	*river.Client[pgx.Tx]
	name string
}

// Option sets one part of a client's configuration: what it works (Work, Queue, Periodic) or
// how it runs (PollEvery).
type Option func(*river.Config)

// Work has the client work w's kind of job.
func Work[T river.JobArgs](w river.Worker[T]) Option {
	return func(c *river.Config) { river.AddWorker(c.Workers, w) }
}

// Queue has the client work the queue called name with at most n jobs at once.
func Queue(name string, n int) Option {
	return func(c *river.Config) { c.Queues[name] = river.QueueConfig{MaxWorkers: n} }
}

// Periodic has the client (when it is the elected leader) insert the periodic jobs (Sweep).
func Periodic(jobs ...*river.PeriodicJob) Option {
	return func(c *river.Config) { c.PeriodicJobs = append(c.PeriodicJobs, jobs...) }
}

// PollEvery has the client look for available jobs every d besides on insert notifications,
// which River rate-limits: a short d keeps a job's start close to its insert.
func PollEvery(d time.Duration) Option {
	return func(c *river.Config) { c.FetchPollInterval = d }
}

// NewClient builds the River client, in schema, of the part of a service called name (its
// errors say it), logging to log. Every client stops, times its jobs out, rescues them and
// fetches by this package's bounds (StopTimeout, JobTimeout, RescueAfter, FetchCooldown).
func NewClient(name string, pool *pgxpool.Pool, schema string, log *slog.Logger, opts ...Option) (*Client, error) {
	cfg := &river.Config{
		Schema:               schema,
		Queues:               map[string]river.QueueConfig{},
		Workers:              river.NewWorkers(),
		Logger:               log,
		SoftStopTimeout:      StopTimeout,
		JobTimeout:           JobTimeout,
		RescueStuckJobsAfter: RescueAfter,
		FetchCooldown:        FetchCooldown,
	}
	for _, o := range opts {
		o(cfg)
	}
	c, err := river.NewClient(riverpgxv5.New(pool), cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: river client: %w", name, err)
	}
	return &Client{Client: c, name: name}, nil
}

// Start begins scheduling and working jobs in the background.
func (c *Client) Start(ctx context.Context) error {
	if err := c.Client.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("%s: start river: %w", c.name, err)
	}
	return nil
}

// Stop lets running jobs finish (up to the soft stop timeout, then cancels them) and stops.
func (c *Client) Stop(ctx context.Context) error {
	if err := c.Client.Stop(ctx); err != nil {
		return fmt.Errorf("%s: stop river: %w", c.name, err)
	}
	return nil
}
