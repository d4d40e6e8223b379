package fanout

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/jobs"
	"github.com/chorus-sms/chorus/services/campaigns/internal/store"
)

// An A/B campaign's send: its audience stored, the two samples are drawn (store.DrawSamples)
// and the hold covers them at their variants' prices and the rest at the dearer variant's;
// the samples are queued, and a decision job is scheduled abTestWaitMinutes after that. The
// decision (store.Decide) is written once and gives the rest the winner's text and price;
// the rest is then queued like any campaign's recipients, and what the hold has left over is
// released at completion. Each step starts from what is stored, so any run of the send (the
// decision job, a resume's send job, a retry) continues the same test.

// pausedRecheck is how often the decision job of a paused campaign looks again; a resume
// starts a send job that carries on at once, so this only bounds a forgotten job's polling.
const pausedRecheck = time.Minute

// drawSamples draws the test's samples (once) and returns the credits the campaign may cost.
// An audience too small for two samples fails the campaign at queue time, with the reason its
// detail shows (failureReason), instead of sending one variant or none.
func (r *Runner) drawSamples(ctx context.Context, c *store.Campaign) (int32, error) {
	_, err := r.store.DrawSamples(ctx, c.OrgID, c.ID)
	if errors.Is(err, store.ErrAudienceTooSmall) {
		return 0, r.fail(ctx, c, apierr.ReasonAbAudienceTooSmall)
	}
	if err != nil {
		return 0, err
	}
	return r.store.AbEstimate(ctx, c.ID)
}

// scheduleDecision fixes the decision time, the first time abTestWaitMinutes from now (the
// samples are queued), and makes sure a decision job waits for it.
func (r *Runner) scheduleDecision(ctx context.Context, c *store.Campaign) error {
	at, err := r.store.SetDecideAt(ctx, c.OrgID, c.ID, time.Now().Add(time.Duration(c.AbTestWaitMinutes)*r.waitUnit))
	if err != nil {
		return err
	}
	args := decideArgs{sendArgs{CampaignID: c.ID, OrgID: c.OrgID, Submission: c.Submission}}
	_, err = r.Insert(ctx, args, jobs.At(at))
	if err != nil {
		return fmt.Errorf("queue A/B decision: %w", err)
	}
	return nil
}

// sendRest decides the test when its time has come and queues its rest with the winner's
// text; before that it leaves the rest to the decision job.
func (r *Runner) sendRest(ctx context.Context, c *store.Campaign, orgZone string) error {
	winner, err := r.store.Decide(ctx, c.OrgID, c.ID, time.Now())
	if err != nil {
		return err
	}
	if winner == "" {
		return r.scheduleDecision(ctx, c)
	}
	return r.queue(ctx, c, orgZone, store.StatusSending, false)
}

// decideArgs is the job of deciding an A/B test at its time and sending its rest: the send
// of that submission, run then. Unique while one waits or runs (a completed one does not stop
// a later one, which finds the test decided and changes nothing).
type decideArgs struct{ sendArgs }

func (decideArgs) Kind() string { return "campaigns.ab_decide" }

func (decideArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: sendAttempts, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: []rivertype.JobState{
		rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning, rivertype.JobStateScheduled,
	}}}
}

type decideWorker struct {
	river.WorkerDefaults[decideArgs]
	r *Runner
}

// Work waits while the campaign is paused (pause delays the decision) or its time has not
// come on this replica's clock, then runs the send, which decides and queues the rest; a
// campaign canceled (or otherwise over) meanwhile is left as it is, undecided.
func (w *decideWorker) Work(ctx context.Context, job *river.Job[decideArgs]) error {
	a := job.Args.sendArgs
	c, err := w.r.store.Get(ctx, a.OrgID, a.CampaignID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("A/B decision of campaign %s: %w", a.CampaignID, err)
	}
	if c.Submission != a.Submission {
		return nil
	}
	switch c.Status {
	case store.StatusPaused:
		return river.JobSnooze(pausedRecheck)
	case store.StatusCompleted, store.StatusFailed:
		return nil // canceled during the wait, or over: nothing more is sent
	}
	t, found, err := w.r.store.GetAbTest(ctx, a.OrgID, a.CampaignID)
	if err != nil {
		return fmt.Errorf("A/B decision of campaign %s: %w", a.CampaignID, err)
	}
	if found && t.Winner == nil && t.DecideAt != nil {
		if early := time.Until(*t.DecideAt); early > 0 {
			return river.JobSnooze(early)
		}
	}
	return w.r.work(ctx, a, job.Attempt >= job.MaxAttempts)
}
