package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/audience"
	"github.com/chorus-sms/chorus/pkg/clients"
	"github.com/chorus-sms/chorus/pkg/jobs"
	"github.com/chorus-sms/chorus/pkg/mergefields"
	"github.com/chorus-sms/chorus/pkg/quiethours"
	"github.com/chorus-sms/chorus/pkg/route"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
	"github.com/chorus-sms/chorus/services/polls/internal/questions"
	"github.com/chorus-sms/chorus/services/polls/internal/store"
)

// Batch sizes: contacts per audience response, participants begun per transaction,
// unsent steps re-queued per query.
const (
	audienceBatch = 500
	beginBatch    = 500
	unsentBatch   = 1000
)

// startArgs is the job of running (or, after a resume, catching up) one start of a poll. It
// is not unique: two at once do the same work once between them.
type startArgs struct {
	PollID uuid.UUID `json:"poll_id"`
	OrgID  uuid.UUID `json:"organization_id"`
	Run    int32     `json:"run"`
}

func (startArgs) Kind() string { return "polls.start" }

// startAttempts bounds a start that keeps failing; the last attempt completes the poll with
// UNAVAILABLE as its failure reason.
const startAttempts = 10

func (startArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{MaxAttempts: startAttempts} }

type startWorker struct {
	river.WorkerDefaults[startArgs]
	r *Runner
}

func (w *startWorker) Work(ctx context.Context, job *river.Job[startArgs]) error {
	// A large audience takes longer than one run: the start resumes from what it stored.
	err := jobs.ResumableOrGiveUp(ctx, job.Attempt >= job.MaxAttempts,
		func(ctx context.Context) error {
			if err := w.r.start(ctx, job.Args); !errors.Is(err, errSkip) {
				return err
			}
			return nil
		},
		func(ctx context.Context, cause error) error {
			w.r.log.ErrorContext(ctx, "poll start gave up", "poll", job.Args.PollID, "error", cause)
			return w.r.fail(ctx, job.Args.OrgID, job.Args.PollID, apierr.ReasonUnavailable)
		})
	if err != nil {
		return fmt.Errorf("poll %s start: %w", job.Args.PollID, err)
	}
	return nil
}

// start runs one start of a poll from wherever it is: the audience stored, the hold placed,
// the participants begun, and the steps never handed to messaging queued again.
func (r *Runner) start(ctx context.Context, a startArgs) error {
	p, err := r.store.Get(ctx, a.OrgID, a.PollID)
	if errors.Is(err, store.ErrNotFound) {
		return errSkip
	}
	if err != nil {
		return err
	}
	if p.Run != a.Run {
		return errSkip // an earlier start's job
	}
	if p.Status == store.StatusScheduled {
		if ok, err := r.store.Activate(ctx, p.OrgID, p.ID, p.Run, r.now()); err != nil || !ok {
			return cmpErr(err, errSkip)
		}
		p.Status = store.StatusActive
	}
	if p.Status != store.StatusActive {
		return errSkip // paused (the resume queues another) or completed
	}
	if p.Sending {
		// A resume: the questions from now on respect the poll's zone as it is now (updated
		// while paused), else the organization's.
		if err := r.rezone(ctx, &p); err != nil {
			return err
		}
	} else {
		o, err := r.peers.Orgs.Organization(ctx, p.OrgID)
		if err != nil {
			return fmt.Errorf("organization: %w", err)
		}
		if !p.AudienceResolved {
			if err := r.resolve(ctx, &p); err != nil {
				return err
			}
			if p.ParticipantCount, err = r.store.Resolved(ctx, p.OrgID, p.ID); err != nil {
				return err
			}
		}
		if !o.GetSandbox() && p.HeldCredits == 0 {
			if err := r.hold(ctx, &p); err != nil {
				return err
			}
		}
		zone := o.GetTimezone()
		if p.Timezone != nil {
			zone = *p.Timezone
		}
		if err := r.store.StartSending(ctx, p.OrgID, p.ID, zone); err != nil {
			return err
		}
	}
	if err := r.beginAll(ctx, &p); err != nil {
		return err
	}
	if err := r.requeueUnsent(ctx, &p); err != nil {
		return err
	}
	return r.store.InTx(ctx, func(tx pgx.Tx) error { return r.finishIfDoneTx(ctx, tx, p.OrgID, p.ID) })
}

// rezone sets the zone a sending poll's questions respect to its timezone, else the
// organization's, when that changed (a paused poll's timezone updated): the steps queued after
// it (a resume's catch-up, later answers) carry the new zone.
func (r *Runner) rezone(ctx context.Context, p *store.Poll) error {
	zone := ""
	if p.Timezone != nil {
		zone = *p.Timezone
	} else {
		o, err := r.peers.Orgs.Organization(ctx, p.OrgID)
		if err != nil {
			return fmt.Errorf("organization: %w", err)
		}
		zone = o.GetTimezone()
	}
	if zone == p.QuietZone {
		return nil
	}
	return r.store.SetQuietZone(ctx, p.OrgID, p.ID, zone)
}

func cmpErr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

// resolve stores the audience as participants, resuming after the last one stored, one batch
// at a time: never the whole audience in memory. Each participant's estimate is its intro
// and costliest question path, rendered with its merge fields.
func (r *Runner) resolve(ctx context.Context, p *store.Poll) error {
	after, err := r.store.LastParticipant(ctx, p.ID)
	if err != nil {
		return err
	}
	req := audience.Request(p.SegmentID, p.ContactFilter, after, audienceBatch)
	err = r.peers.Contacts.Audience(ctx, p.OrgID, req, func(members []*contactsv1.AudienceMember) error {
		if status, err := r.status(ctx, p); err != nil || status != store.StatusActive {
			return cmpErr(err, errSkip)
		}
		batch := make([]store.NewParticipant, len(members))
		for i, m := range members {
			id, err := uuid.Parse(m.GetContactId())
			if err != nil {
				return fmt.Errorf("audience member id %q: %w", m.GetContactId(), err)
			}
			member, err := protojson.Marshal(m)
			if err != nil {
				return fmt.Errorf("audience member %s: %w", id, err)
			}
			batch[i] = store.NewParticipant{
				ContactID: id, Phone: m.GetPhone(), FirstName: m.GetFirstName(), LastName: m.GetLastName(), Member: member,
				RecipientTimezone: quiethours.RecipientZone(m.GetTimezone(), m.GetPhone()), Estimate: Estimate(p, m),
			}
		}
		if err := r.pickSenders(ctx, p, batch); err != nil {
			return err
		}
		return r.store.AddParticipants(ctx, p.OrgID, p.ID, batch)
	})
	if errors.Is(err, clients.ErrNotFound) {
		return r.fail(ctx, p.OrgID, p.ID, apierr.ReasonSegmentNotFound)
	}
	return err
}

// pickSenders gives each of batch its number from p's pool, once (messaging's sticky rule:
// the pool number that last texted them, else one of their area code, else the least busy),
// so all of a participant's questions come from one number. A poll without a pool (or with a
// pool of one) sends from its one number and asks messaging nothing.
func (r *Runner) pickSenders(ctx context.Context, p *store.Poll, batch []store.NewParticipant) error {
	if len(p.FromPhoneNumberIDs) < 2 {
		return nil
	}
	pool, phones := make([]string, len(p.FromPhoneNumberIDs)), make([]string, len(batch))
	for i, id := range p.FromPhoneNumberIDs {
		pool[i] = id.String()
	}
	for i, b := range batch {
		phones[i] = b.Phone
	}
	picked, err := r.peers.Messaging.PickSenders(ctx, p.OrgID, SourceKind, p.ID.String(), pool, phones)
	if err != nil {
		return fmt.Errorf("pick senders: %w", err)
	}
	if len(picked) != len(batch) {
		return fmt.Errorf("pick senders: %d numbers for %d participants", len(picked), len(batch))
	}
	for i, id := range picked {
		n, err := uuid.Parse(id)
		if err != nil {
			return fmt.Errorf("picked number id %q: %w", id, err)
		}
		batch[i].FromPhoneNumberID = &n
	}
	return nil
}

// Estimate is what one participant can cost against the hold: the costliest path through the
// questions, the first sent with the intro (MMS with media), rendered for m, each priced as
// messaging will (pkg/route's rule under AUTO: a text over 960 characters goes as MMS). Re-asks and the outro are
// charged to the balance when sent (they are not on every path, and the outro may leave after
// the hold is released).
func Estimate(p *store.Poll, m *contactsv1.AudienceMember) int32 {
	return questions.LongestPath(p.Questions, func(n int) int32 {
		if n == 1 {
			_, c := route.Price(route.Auto, p.IntroMediaURL != nil, render(IntroText(p, &p.Questions[0]), m))
			return c
		}
		_, c := route.Price(route.Auto, false, render(p.Questions[n-1].Text, m))
		return c
	})
}

// IntroText is the first message's text: the introductory text, a blank line, question 1
// (the question alone when there is no introductory text).
func IntroText(p *store.Poll, first *questions.Question) string {
	if strings.TrimSpace(p.IntroText) == "" {
		return first.Text
	}
	return p.IntroText + "\n\n" + first.Text
}

func render(text string, m *contactsv1.AudienceMember) string {
	return strings.TrimSpace(mergefields.Text(text, m, true))
}

// hold places the poll's hold for the sum of the participants' estimates; a refusal (no
// credits, suspended) completes the poll with the reason.
func (r *Runner) hold(ctx context.Context, p *store.Poll) error {
	estimate, err := r.store.Estimate(ctx, p.ID)
	if err != nil || estimate == 0 {
		return err
	}
	refusal, err := r.peers.Billing.Hold(ctx, p.OrgID, p.ID.String(), estimate)
	if err != nil {
		return err
	}
	if refusal != "" {
		return r.fail(ctx, p.OrgID, p.ID, refusal)
	}
	p.HeldCredits = estimate
	return r.store.SetHeld(ctx, p.OrgID, p.ID, estimate)
}

// fail completes a poll that cannot run with reason (its failureReason), releasing its hold
// if one was placed; it returns errSkip so the start ends there.
func (r *Runner) fail(ctx context.Context, org, poll uuid.UUID, reason string) error {
	err := r.store.InTx(ctx, func(tx pgx.Tx) error {
		failed, err := r.store.Fail(ctx, tx, org, poll, reason, r.now())
		if err != nil || !failed {
			return err
		}
		return r.finishTx(ctx, tx, org, poll, true)
	})
	return cmpErr(err, errSkip)
}

func (r *Runner) status(ctx context.Context, p *store.Poll) (string, error) {
	now, err := r.store.Get(ctx, p.OrgID, p.ID)
	if err != nil {
		return "", err
	}
	if now.Run != p.Run {
		return "", nil
	}
	return now.Status, nil
}

// beginAll begins the poll's not_started participants whose contact is in no other poll, a
// batch per transaction (under the poll's row lock, so a pause or close is not overtaken),
// each with its first step's job.
func (r *Runner) beginAll(ctx context.Context, p *store.Poll) error {
	for {
		var begun []store.Begun
		err := r.store.InTx(ctx, func(tx pgx.Tx) error {
			now, err := r.store.Lock(ctx, tx, p.OrgID, p.ID)
			if err != nil {
				return err
			}
			if now.Status != store.StatusActive || now.Run != p.Run {
				return errSkip
			}
			if begun, err = r.store.BeginBatch(ctx, tx, p.OrgID, p.ID, beginBatch, r.now()); err != nil {
				return err
			}
			return r.stepsTx(ctx, tx, begun)
		})
		if err != nil || len(begun) == 0 {
			return err
		}
	}
}

// requeueUnsent queues again the steps that were never handed to messaging: the questions of
// participants who answered while the poll was paused, and any step whose job was lost.
func (r *Runner) requeueUnsent(ctx context.Context, p *store.Poll) error {
	after := uuid.Nil
	for {
		batch, err := r.store.Unsent(ctx, p.ID, after, unsentBatch)
		if err != nil || len(batch) == 0 {
			return err
		}
		if err := r.store.InTx(ctx, func(tx pgx.Tx) error { return r.stepsTx(ctx, tx, batch) }); err != nil {
			return err
		}
		after = batch[len(batch)-1].Participant
	}
}
