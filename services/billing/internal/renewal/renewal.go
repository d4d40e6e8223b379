// Package renewal renews full_service plans' periods as they end: a River sweep that the
// elected leader among the replicas schedules every interval, and once at start so a restart
// catches up at once.
package renewal

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

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

// New builds the River client sweeping every interval; Start begins working.
func New(pool *pgxpool.Pool, schema string, r Renewer, every time.Duration, log *slog.Logger) (*jobs.Client, error) {
	return jobs.NewClient("renewal", pool, schema, log, jobs.Queue(queue, 1), jobs.Periodic(jobs.Sweep(every, args{})),
		jobs.Work(&worker{renewer: r, log: log}))
}
