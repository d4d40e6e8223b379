// Package jobs holds the River setup services share: sweeps, the periodic jobs that look for
// due work (stuck messages, ended billing periods) with one replica working each one.
package jobs

import (
	"time"

	"github.com/riverqueue/river"
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
