package orgs

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// subscribe follows channel on rdb until ctx ends or the subscription fails, handing handle
// each message received: a *redis.Subscription when (re)subscribed, *redis.Message, or the
// *redis.Pong of a PING sent down the subscription's own connection every `every`, whose
// payload is now() in nanoseconds when it was sent (Redis answers in order on one
// connection, so it proves every message published before it was sent has been handled). A
// connection silent for four PINGs is taken for lost.
func subscribe(ctx context.Context, rdb *redis.Client, channel string, every time.Duration, now func() time.Duration, handle func(any)) error {
	ps := rdb.Subscribe(ctx, channel)
	defer ps.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := ps.Ping(ctx, strconv.FormatInt(int64(now()), 10)); err != nil {
					cancel()
					return
				}
			}
		}
	}()
	for {
		msg, err := ps.ReceiveTimeout(ctx, 4*every)
		if err != nil {
			return err
		}
		handle(msg)
	}
}

// follow runs sub again after each failure until ctx ends, calling lost after each (what was
// announced meanwhile is missed), which reports whether the subscription had been live: only
// the first failure of a run of them is logged, as warning, not every retry while Redis
// stays away.
func follow(ctx context.Context, log *slog.Logger, warning string, sub func(context.Context) error, lost func() (wasLive bool)) {
	for ctx.Err() == nil {
		err := sub(ctx)
		wasLive := lost()
		if ctx.Err() != nil {
			return
		}
		if wasLive {
			log.WarnContext(ctx, warning, "err", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(followRetryDelay):
		}
	}
}

// followRetryDelay is the wait before subscribing again after a failure.
const followRetryDelay = 250 * time.Millisecond
