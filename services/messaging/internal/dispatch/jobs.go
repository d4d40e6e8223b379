package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"github.com/chorus-sms/chorus/services/messaging/internal/carrier"
	"github.com/chorus-sms/chorus/services/messaging/internal/store"
)

// sendArgs is the job of dispatching one queued message. It is queued once for a message just
// stored and once more each time the reconciler puts the message back in the queue
// (requeueUnsent). It carries no unique key: a second job for a message finds it claimed or
// settled and does nothing (the claim is what makes a send happen once), and without the key
// a fan-out's jobs are copied in (COPY) rather than inserted against the unique index.
type sendArgs struct {
	MessageID uuid.UUID `json:"message_id"`
	OrgID     uuid.UUID `json:"organization_id"`
	// Requeue is the message's requeue count when it was queued; 0, the first queueing, is
	// left out of the arguments.
	Requeue int `json:"requeue,omitempty"`
	// Number is the message's sending number when a bulk batch was expanded into it: the
	// expander keeps each number's waiting jobs short (bulk.go).
	Number string `json:"number,omitempty"`
}

func (sendArgs) Kind() string { return "messaging.send" }

func (sendArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: sendAttempts}
}

// sendAttempts bounds retries of a carrier that stays unavailable; the message then fails.
const sendAttempts = 6

type sendWorker struct {
	river.WorkerDefaults[sendArgs]
	d *Dispatcher
}

func (w *sendWorker) Work(ctx context.Context, job *river.Job[sendArgs]) error {
	var meta struct {
		Snoozes int `json:"snoozes"` // River counts a job's snoozes in its metadata
		// Output is what an earlier run recorded (river.RecordOutput): its slot in its
		// number's line.
		Output lineSlot `json:"output"`
	}
	_ = json.Unmarshal(job.Metadata, &meta) // none recorded: never snoozed, no slot
	v, err := w.d.dispatchQueued(ctx, job.Args.OrgID, job.Args.MessageID, attempt{last: job.Attempt >= job.MaxAttempts, snoozes: meta.Snoozes, slot: meta.Output.Slot})
	if err != nil {
		return fmt.Errorf("dispatch message %s: %w", job.Args.MessageID, err)
	}
	if !v.slot.IsZero() && !v.slot.Equal(meta.Output.Slot) {
		if err := river.RecordOutput(ctx, lineSlot{Slot: v.slot}); err != nil {
			return fmt.Errorf("dispatch message %s: keep its slot: %w", job.Args.MessageID, err)
		}
	}
	if v.wait > 0 {
		return river.JobSnooze(v.wait)
	}
	return nil
}

// lineSlot is a send job's slot in its number's line (lines.go), kept in the job's recorded
// output while it is back in the queue.
type lineSlot struct {
	Slot time.Time `json:"slot"`
}

// WakeSource makes the dispatch jobs of a resumed source's queued messages, snoozed while it
// was paused, due now, in one statement: a resume is prompt however long their wait had grown.
func (d *Dispatcher) WakeSource(ctx context.Context, org uuid.UUID, kind, id string) error {
	_, err := d.pool.Exec(ctx, `
		UPDATE river_job j SET state = 'available', scheduled_at = now()
		FROM messages m
		WHERE j.state = 'scheduled' AND j.kind = $4 AND m.id = (j.args->>'message_id')::uuid
			AND m.organization_id = $1 AND m.source_kind = $2 AND m.source_id = $3 AND m.status = 'queued'`,
		org, kind, id, sendArgs{}.Kind())
	if err != nil {
		return fmt.Errorf("wake source's messages: %w", err)
	}
	return nil
}

// reportArgs are the statuses the sandbox carrier reports, at one moment, about the messages
// of one recorded acceptance. They are scheduled (ScheduledAt) in the transaction that records
// the acceptance, so they survive a restart and are never lost nor queued for a send that was
// not recorded. One job carries a whole dispatch batch's reports, as a carrier's callbacks
// arrive together: a job per message cost more than the sends themselves. They carry no unique
// key: applying a report twice changes nothing, since statuses only move forward.
type reportArgs struct {
	Reports packed[sandboxReport] `json:"reports"`
}

// sandboxReport is one status of one message.
type sandboxReport struct {
	MessageID         uuid.UUID `json:"message_id"`
	ProviderMessageID string    `json:"provider_message_id"`
	Status            string    `json:"status"`
}

func (reportArgs) Kind() string { return "messaging.sandbox_reports" }

func (reportArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: queueSandbox}
}

// sandboxReports are the jobs of the sandbox's reports about the messages it accepted at now:
// the n-th status of each (in the order SandboxOutcome gives) n delays after now, one job
// for each n.
func sandboxReports(accepted []accepted, now time.Time, delay time.Duration) []river.InsertManyParams {
	var steps [][]sandboxReport
	for _, a := range accepted {
		for i, s := range carrier.SandboxOutcome(a.m.ContactPhone) {
			if i == len(steps) {
				steps = append(steps, nil)
			}
			steps[i] = append(steps[i], sandboxReport{MessageID: a.m.ID, ProviderMessageID: a.acc.ProviderMessageID, Status: s})
		}
	}
	jobs := make([]river.InsertManyParams, len(steps))
	for i, reports := range steps {
		jobs[i] = river.InsertManyParams{
			Args:       reportArgs{Reports: reports},
			InsertOpts: &river.InsertOpts{ScheduledAt: now.Add(time.Duration(i+1) * delay)},
		}
	}
	return jobs
}

type reportWorker struct {
	river.WorkerDefaults[reportArgs]
	d *Dispatcher
}

// Work applies the statuses through applyStatuses, the path a real carrier's callbacks take
// after their signature is checked; a message deleted with its contact meanwhile is skipped.
func (w *reportWorker) Work(ctx context.Context, job *river.Job[reportArgs]) error {
	reports := make([]store.StatusReport, len(job.Args.Reports))
	for i, r := range job.Args.Reports {
		reports[i] = store.StatusReport{ID: r.MessageID, Status: r.Status, ProviderMessageID: r.ProviderMessageID}
	}
	if err := w.d.applyStatuses(ctx, carrier.SandboxName, reports); err != nil {
		return fmt.Errorf("sandbox reports: %w", err)
	}
	return nil
}
