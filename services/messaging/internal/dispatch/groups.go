package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
)

// A bulk batch's messages are queued in groups: one River job dispatches up to groupMax
// messages of one number side by side, as that many send jobs would, and every step of theirs
// still shares its round trips with the other dispatches running (batches.go). A job is a row
// written three times (queued, fetched, completed) in a table of seven indexes; a group
// spreads those writes over its messages. A message of a group that must come back later (quiet hours, a paused source, a
// slot in its number's line) or whose dispatch failed goes on as a send job of its own, so
// waiting, retries and their bounds are exactly a send job's.
const groupMax = 100

// queueGroups is the queue of group jobs. Its few workers each run a whole group, so the
// messages being dispatched from groups are bounded by the dispatcher's semaphore (inGroups),
// not by River's workers.
const queueGroups = "send_groups"

// sendGroupArgs is the job of dispatching a group of one bulk batch's messages, all from
// Number. It carries no unique key, for the reason sendArgs gives: a message of a group run
// twice (a retry, a rescue after a crash) is found claimed or settled and left alone.
type sendGroupArgs struct {
	OrgID      uuid.UUID         `json:"organization_id"`
	Number     string            `json:"number"`
	MessageIDs packed[uuid.UUID] `json:"message_ids"`
	// Size is how many messages MessageIDs holds, for the expander's count of waiting
	// messages (packed, the list is a string to SQL).
	Size int `json:"size"`
}

func (sendGroupArgs) Kind() string { return "messaging.send_group" }

func (sendGroupArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: queueGroups}
}

type sendGroupWorker struct {
	river.WorkerDefaults[sendGroupArgs]
	d *Dispatcher
}

// Work dispatches the group and queues what must come back; an error (the follow-ups could
// not be queued) has River run the group again, which does nothing more for the messages
// already dispatched.
func (w *sendGroupWorker) Work(ctx context.Context, job *river.Job[sendGroupArgs]) error {
	later := w.d.dispatchGroup(ctx, job.Args)
	if len(later) == 0 {
		return nil
	}
	// Queued even when the run's time is up or the process is stopping: the messages not
	// dispatched yet are among them.
	if _, err := w.d.river.InsertManyFast(context.WithoutCancel(ctx), later); err != nil {
		return fmt.Errorf("dispatch group of %d messages: queue %d to come back: %w", len(job.Args.MessageIDs), len(later), err)
	}
	return nil
}

// groupRetry is when a group's message whose dispatch failed is tried again, as its own send
// job: about when River retries a send job's first failure.
const groupRetry = time.Second

// dispatchGroup dispatches g's messages side by side, at most d.inGroups' capacity at once
// across every group, and returns the send jobs of those that must come back: a message that
// asked to wait is scheduled for then, keeping any slot it booked in its number's line, and
// one whose dispatch failed is retried after groupRetry.
func (d *Dispatcher) dispatchGroup(ctx context.Context, g sendGroupArgs) []river.InsertManyParams {
	later := make([]*river.InsertManyParams, len(g.MessageIDs))
	var wg sync.WaitGroup
	for i, id := range g.MessageIDs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var v verdict
			var err error
			select {
			case d.inGroups <- struct{}{}:
				v, err = d.dispatchQueued(ctx, g.OrgID, id, attempt{})
				<-d.inGroups
			case <-ctx.Done():
				err = ctx.Err()
			}
			args := sendArgs{MessageID: id, OrgID: g.OrgID, Number: g.Number}
			switch {
			case err != nil:
				d.log.WarnContext(ctx, "dispatch of a group's message failed; it is retried as a job of its own", "message", id, "err", err)
				later[i] = &river.InsertManyParams{Args: args, InsertOpts: &river.InsertOpts{ScheduledAt: time.Now().Add(groupRetry)}}
			case v.wait > 0:
				opts := &river.InsertOpts{ScheduledAt: time.Now().Add(v.wait)}
				if !v.slot.IsZero() {
					// Where a send job's own run would have recorded it (sendWorker.Work).
					opts.Metadata, _ = json.Marshal(map[string]lineSlot{"output": {Slot: v.slot}})
				}
				later[i] = &river.InsertManyParams{Args: args, InsertOpts: opts}
			}
		}()
	}
	wg.Wait()
	var out []river.InsertManyParams
	for _, p := range later {
		if p != nil {
			out = append(out, *p)
		}
	}
	return out
}

// groups splits the messages of a bulk batch into the args of its group jobs.
func groups(org uuid.UUID, number string, ids []uuid.UUID) []sendGroupArgs {
	var out []sendGroupArgs
	for len(ids) > 0 {
		n := min(len(ids), groupMax)
		out = append(out, sendGroupArgs{OrgID: org, Number: number, MessageIDs: ids[:n:n], Size: n})
		ids = ids[n:]
	}
	return out
}

// groupWorkers is how many group jobs run at once beside `workers` dispatches: twice the
// groups that fill them, so that the next groups are under way while the last messages of
// others finish.
func groupWorkers(workers int) int {
	return max(2, 2*((workers+groupMax-1)/groupMax))
}
