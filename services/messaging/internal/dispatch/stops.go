package dispatch

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/chorus-sms/chorus/services/messaging/internal/store"
)

// A contact's STOP takes effect when it arrives, not when contacts records it some
// milliseconds later: the inbound handler marks the (organization, phone) first, every
// consent check reads its recipients' marks before it asks contacts, and the mark is removed
// once contacts holds the opt-out. A send whose consent check began after the STOP arrived is
// refused as opted out; one whose check came earlier went first, and the STOP is answered only
// once it is handed off (AwaitHandOffs). The marks live in Redis, shared by every replica, as
// the throttle does.

// stopMarkTTL outlives a STOP's handling (bounded by the webhook's deadline); a mark left by a
// handler that died expires then, and the carrier's retry of the webhook marks it again.
const stopMarkTTL = 2 * time.Minute

func stopMarkKey(org uuid.UUID, phone string) string {
	return "messaging:stop:" + org.String() + ":" + phone
}

// clearStopMark deletes a mark only if it is still the one its STOP set: a second STOP from
// the same phone keeps its own.
var clearStopMark = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) end return 0`)

// MarkStop records that a STOP from phone to org arrived, before anything else is done with
// it. The returned clear removes the mark; call it once contacts has recorded the opt-out (a
// STOP that fails leaves its mark until it expires, and its recipient is not texted meanwhile).
func (d *Dispatcher) MarkStop(ctx context.Context, org uuid.UUID, phone string) (clear func(), err error) {
	key, token := stopMarkKey(org, phone), uuid.NewString()
	if err := d.throttle.rdb.Set(ctx, key, token, stopMarkTTL).Err(); err != nil {
		return nil, fmt.Errorf("mark stop: %w", err)
	}
	return func() {
		_ = clearStopMark.Run(context.WithoutCancel(ctx), d.throttle.rdb, []string{key}, token).Err()
	}, nil
}

// stopMarked reports which of msgs' recipients have a STOP being handled, in one round trip.
func (d *Dispatcher) stopMarked(ctx context.Context, msgs []store.Message) ([]bool, error) {
	keys := make([]string, len(msgs))
	for i, m := range msgs {
		keys[i] = stopMarkKey(m.OrgID, m.ContactPhone)
	}
	vals, err := d.throttle.rdb.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, fmt.Errorf("read stop marks: %w", err)
	}
	out := make([]bool, len(msgs))
	for i, v := range vals {
		out[i] = v != nil
	}
	return out, nil
}
