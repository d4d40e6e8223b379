package dispatch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"github.com/chorus-sms/chorus/services/messaging/internal/carrier"
)

// sendArgs is the job of dispatching one queued message. It is unique per message, so
// queueing it twice is a no-op.
type sendArgs struct {
	MessageID uuid.UUID `json:"message_id" river:"unique"`
	OrgID     uuid.UUID `json:"organization_id"`
}

func (sendArgs) Kind() string { return "messaging.send" }

func (sendArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: sendAttempts, UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

// sendAttempts bounds retries of a carrier that stays unavailable; the message then fails.
const sendAttempts = 6

type sendWorker struct {
	river.WorkerDefaults[sendArgs]
	d *Dispatcher
}

func (w *sendWorker) Timeout(*river.Job[sendArgs]) time.Duration { return time.Minute }

func (w *sendWorker) Work(ctx context.Context, job *river.Job[sendArgs]) error {
	wait, err := w.d.dispatchQueued(ctx, job.Args.OrgID, job.Args.MessageID, job.Attempt >= job.MaxAttempts)
	if err != nil {
		return fmt.Errorf("dispatch message %s: %w", job.Args.MessageID, err)
	}
	if wait > 0 {
		return river.JobSnooze(wait)
	}
	return nil
}

// reportArgs is the sandbox carrier's queued outcome of one message.
type reportArgs struct {
	carrier.SandboxReport
	DueAt time.Time `json:"due_at"`
}

func (reportArgs) Kind() string { return "messaging.sandbox_report" }

type reportWorker struct {
	river.WorkerDefaults[reportArgs]
	d     *Dispatcher
	delay time.Duration
}

// Work waits until the report is due, then delivers each status through ApplyStatus, the path
// a real carrier's callbacks take after their signature is checked.
func (w *reportWorker) Work(ctx context.Context, job *river.Job[reportArgs]) error {
	if d := time.Until(job.Args.DueAt); d > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
		}
	}
	id, err := uuid.Parse(job.Args.MessageID)
	if err != nil {
		return river.JobCancel(fmt.Errorf("sandbox report of %q: %w", job.Args.MessageID, err))
	}
	for i, s := range job.Args.Statuses {
		if i > 0 {
			time.Sleep(w.delay)
		}
		err := w.d.ApplyStatus(ctx, carrier.SandboxName, id, carrier.Status{ProviderMessageID: job.Args.ProviderMessageID, Status: s})
		if errors.Is(err, ErrUnknownMessage) {
			return river.JobCancel(err)
		}
		if err != nil {
			return fmt.Errorf("sandbox report of %s: %w", id, err)
		}
	}
	return nil
}
