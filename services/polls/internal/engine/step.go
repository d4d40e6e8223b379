package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/chorus-sms/chorus/pkg/jobs"
	"github.com/chorus-sms/chorus/pkg/mergefields"
	"github.com/chorus-sms/chorus/pkg/outbox"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
	messagingv1 "github.com/chorus-sms/chorus/proto/gen/go/messaging/v1"
	"github.com/chorus-sms/chorus/services/polls/internal/questions"
	"github.com/chorus-sms/chorus/services/polls/internal/store"
)

// stepArgs is the job of sending one participant's step. Not unique: a step is sent under
// its dedupe keys, so a duplicate job queues nothing twice, and a resume must be able to queue
// a step whose earlier job ran while the poll was paused.
type stepArgs struct {
	ParticipantID uuid.UUID `json:"participant_id"`
	OrgID         uuid.UUID `json:"organization_id"`
	Step          int32     `json:"step"`
}

func (stepArgs) Kind() string { return "polls.step" }

// stepQueue is the steps' own queue: many short jobs (a transaction and one messaging call),
// worked many at a time so a round of answers does not queue behind a start's long run.
const stepQueue = "polls_steps"

// stepWorkers is how many steps one replica sends at once: each mostly waits on messaging.
const stepWorkers = 32

func (stepArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: stepQueue} }

type stepWorker struct {
	river.WorkerDefaults[stepArgs]
	r *Runner
}

func (w *stepWorker) Work(ctx context.Context, job *river.Job[stepArgs]) error {
	if err := w.r.step(ctx, job.Args); err != nil && !errors.Is(err, errSkip) {
		return fmt.Errorf("poll participant %s step %d: %w", job.Args.ParticipantID, job.Args.Step, err)
	}
	return nil
}

// step sends the participant's step a.Step while it is still the participant's step and the
// poll is active (a paused poll's steps wait for the resume, which queues them again). The
// step is marked sent (handed to messaging) before messaging is called; if the call fails, the
// job's retry sends it under the same keys. A reply answers the step only once messaging's
// status event says its message reached the carrier (asked: statusTx), not on the hand-off:
// messaging may hold it for quiet hours.
func (r *Runner) step(ctx context.Context, a stepArgs) error {
	var p store.Participant
	var poll store.Poll
	var msgs []*messagingv1.OutgoingMessage
	tooLong := false
	err := r.store.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		if p, err = r.store.LockParticipant(ctx, tx, a.OrgID, a.ParticipantID); err != nil {
			return err
		}
		if p.Step != a.Step || p.Pending == nil || (p.Status != store.InProgress && p.Status != store.Completed) {
			return errSkip
		}
		if poll, err = r.store.GetTx(ctx, tx, p.OrgID, p.PollID); err != nil {
			return err
		}
		// A paused poll's steps wait for the resume; an outro still leaves once its poll
		// completed (the last participant's completion completes the poll).
		if poll.Status != store.StatusActive && (*p.Pending != store.PendingOutro || poll.Status != store.StatusCompleted) {
			return errSkip
		}
		// A text merged past what one message carries is not sent: a question that cannot be
		// asked ends the participation (text_too_long, its hold's share released with the
		// poll's rest); a completed participant's outro is dropped.
		if tooLong, err = longText(&poll, &p); err != nil {
			return err
		}
		if tooLong {
			if p.Status != store.InProgress {
				return nil
			}
			ended, err := r.store.TerminateParticipant(ctx, tx, p.OrgID, p.ID, store.ReasonTextTooLong, r.now())
			if err != nil {
				return err
			}
			return r.freedTx(ctx, tx, p.OrgID, ended)
		}
		if msgs, err = Messages(&poll, &p); err != nil {
			return err
		}
		if p.SentStep < p.Step {
			return r.store.MarkSent(ctx, tx, &p, len(msgs) == 0, r.now())
		}
		return nil
	})
	if errors.Is(err, store.ErrNotFound) {
		return errSkip // the contact was deleted
	}
	if err != nil || tooLong || len(msgs) == 0 {
		return err
	}
	if _, err := r.peers.Messaging.SendMessages(ctx, p.OrgID, msgs); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	return nil
}

// Messages are what p's pending step sends, keyed "poll:<poll>:<contact>:<step>:<part>":
// the intro then question 1, as one message (MMS with introMediaUrl: carriers do not keep the
// order of two messages, and a question must not arrive before its intro); a question; a
// re-ask (the valid codes, then the question); or the outro (MMS with outroMediaUrl). Intro
// and questions post against the poll's hold; re-asks and the outro are charged when sent.
func Messages(poll *store.Poll, p *store.Participant) ([]*messagingv1.OutgoingMessage, error) {
	var m contactsv1.AudienceMember
	if err := protojson.Unmarshal(p.Member, &m); err != nil {
		return nil, fmt.Errorf("participant %s merge data: %w", p.ID, err)
	}
	key := "poll:" + poll.ID.String() + ":" + p.ContactID.String() + ":" + strconv.Itoa(int(p.Step)) + ":"
	hold := ""
	if poll.HeldCredits > 0 {
		hold = poll.ID.String()
	}
	msg := func(part, text string, media *string, held bool) *messagingv1.OutgoingMessage {
		out := &messagingv1.OutgoingMessage{
			DedupeKey: key + part, To: p.Phone, Body: render(text, &m), SourceKind: SourceKind, SourceId: poll.ID.String(),
			QuietHoursTimezone: poll.QuietZone, RecipientTimezone: p.RecipientTimezone, RecipientState: m.GetState(),
		}
		if from := p.FromPhoneNumberID; from != nil {
			out.FromPhoneNumberId = from.String()
		} else if poll.FromPhoneNumberID != nil {
			out.FromPhoneNumberId = poll.FromPhoneNumberID.String()
		}
		if media != nil {
			out.MediaUrl = *media
		}
		if held {
			out.HoldId = hold
		}
		return out
	}
	q := questions.ByNumber(poll.Questions, int(p.CurrentQuestion))
	var out []*messagingv1.OutgoingMessage
	switch *p.Pending {
	case store.PendingIntro:
		if q != nil {
			out = append(out, msg("intro", IntroText(poll, q), poll.IntroMediaURL, true))
		}
	case store.PendingQuestion:
		if q != nil {
			out = append(out, msg("q"+strconv.Itoa(q.Number), q.Text, nil, true))
		}
	case store.PendingReask:
		if q != nil {
			out = append(out, msg("reask", q.ReaskText(), nil, false))
		}
	case store.PendingOutro:
		if render(poll.OutroText, &m) != "" {
			out = append(out, msg("outro", poll.OutroText, poll.OutroMediaURL, false))
		}
	}
	// A text merged to nothing is not sent (messaging refuses an empty body).
	kept := out[:0]
	for _, o := range out {
		if o.Body != "" {
			kept = append(kept, o)
		}
	}
	return kept, nil
}

// longText is whether a text p's pending step would send is over what one message carries
// once merged (smsrules.MaxTextLength): such a text is never sent.
func longText(poll *store.Poll, p *store.Participant) (bool, error) {
	msgs, err := Messages(poll, p)
	for _, m := range msgs {
		if !mergefields.Fits(m.GetBody()) {
			return true, err
		}
	}
	return false, err
}

// sweepQueue is the silent-participant sweep's own queue.
const sweepQueue = "polls_sweep"

// sweepArgs is the periodic job terminating participants silent for longer than their poll's
// participantTimeoutHours, and beginning waiting participants whose contact is free.
type sweepArgs struct{}

func (sweepArgs) Kind() string { return "polls.sweep_silent" }

func (sweepArgs) InsertOpts() river.InsertOpts { return jobs.SweepInsertOpts(sweepQueue) }

type sweepWorker struct {
	river.WorkerDefaults[sweepArgs]
	r *Runner
}

const sweepBatch = 500

func (w *sweepWorker) Timeout(*river.Job[sweepArgs]) time.Duration { return 5 * time.Minute }

// Work terminates silent participants a batch per transaction, each freed contact beginning
// a poll it waits for; then begins any waiting participation whose contact is free (a contact
// freed while the poll it waits for was still storing its audience); then forgets old
// handled inbound messages.
func (w *sweepWorker) Work(ctx context.Context, _ *river.Job[sweepArgs]) error {
	for {
		var n int
		err := w.r.store.InTx(ctx, func(tx pgx.Tx) error {
			ended, orgs, err := w.r.store.TerminateSilent(ctx, tx, w.r.hour, w.r.now(), sweepBatch)
			if err != nil {
				return err
			}
			n = len(ended)
			for i, e := range ended {
				if err := w.r.freedTx(ctx, tx, orgs[i], []store.Ended{e}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("poll timeout sweep: %w", err)
		}
		if n < sweepBatch {
			break
		}
	}
	err := w.r.store.InTx(ctx, func(tx pgx.Tx) error {
		begun, err := w.r.store.BeginFree(ctx, tx, sweepBatch, w.r.now())
		if err != nil {
			return err
		}
		return w.r.stepsTx(ctx, tx, begun)
	})
	if err != nil {
		return err
	}
	return w.r.pruneHandled(ctx)
}

// handledRetention is how long an inbound read as a reply is remembered: past messaging's
// outbox retention its event can no longer come again, with a day's margin.
const handledRetention = outbox.DefaultRetention + 24*time.Hour

// pruneHandled forgets the inbound messages read as replies longer ago than handledRetention.
func (r *Runner) pruneHandled(ctx context.Context) error {
	for {
		n, err := r.store.PruneHandled(ctx, r.now().Add(-handledRetention), sweepBatch)
		if err != nil || n < sweepBatch {
			return err
		}
	}
}
