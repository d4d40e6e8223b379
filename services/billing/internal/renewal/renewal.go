// Package renewal renews full_service plans' periods as they end: a River sweep that the
// elected leader among the replicas schedules every interval, and once at start so a restart
// catches up at once.
package renewal

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/chorus-sms/chorus/pkg/jobs"
)

// Renewer renews every period that ended by now and says how many it granted. Renewals are
// idempotent, so a sweep repeated after a failure grants nothing twice.
type Renewer interface {
	RenewDue(ctx context.Context, now time.Time) (int, error)
}

// queue holds only sweeps, so one never waits behind other work.
const queue = "renewal"

// args is one sweep of ended periods.
type args struct{}

func (args) Kind() string { return "billing.renew_periods" }

// InsertOpts makes it a sweep: one at a time, never retried (the next one does its work).
func (args) InsertOpts() river.InsertOpts { return jobs.SweepInsertOpts(queue) }

type worker struct {
	river.WorkerDefaults[args]
	renewer Renewer
	log     *slog.Logger
}

// Work renews what is due now. A failed sweep is left to the next one.
func (w *worker) Work(ctx context.Context, _ *river.Job[args]) error {
	n, err := w.renewer.RenewDue(ctx, time.Now())
	if n > 0 {
		w.log.InfoContext(ctx, "billing: renewed periods", "renewed", n)
	}
	if err != nil {
		return fmt.Errorf("renew periods (%d renewed): %w", n, err)
	}
	return nil
}

// Jobs owns the River client that schedules and works the sweeps in the service's schema.
type Jobs struct {
	client *river.Client[pgx.Tx]
}

// New builds the River client sweeping every interval; Start begins working.
func New(pool *pgxpool.Pool, schema string, r Renewer, every time.Duration, log *slog.Logger) (*Jobs, error) {
	workers := river.NewWorkers()
	river.AddWorker(workers, &worker{renewer: r, log: log})
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Schema:          schema,
		Queues:          map[string]river.QueueConfig{queue: {MaxWorkers: 1}},
		Workers:         workers,
		PeriodicJobs:    []*river.PeriodicJob{jobs.Sweep(every, args{})},
		Logger:          log,
		SoftStopTimeout: 10 * time.Second,
	})
	if err != nil {
		return nil, fmt.Errorf("renewal: river client: %w", err)
	}
	return &Jobs{client: client}, nil
}

// Start begins scheduling and working sweeps. They run under a context Start's ctx does not
// cancel, so that Stop can let a running one finish.
func (j *Jobs) Start(ctx context.Context) error {
	if err := j.client.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("renewal: start river: %w", err)
	}
	return nil
}

// Stop lets a running sweep finish (up to the soft stop timeout, then cancels it) and stops.
func (j *Jobs) Stop(ctx context.Context) error {
	if err := j.client.Stop(ctx); err != nil {
		return fmt.Errorf("renewal: stop river: %w", err)
	}
	return nil
}
