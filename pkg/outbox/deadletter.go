package outbox

import (
	"context"
	"fmt"
	"maps"

	"github.com/redis/go-redis/v9"
)

// deadLetter copies entry e to the dead-letter stream with why it was given up on, and
// acknowledges it in the same MULTI, so the group goes on without it and nothing is lost.
func (c *Consumer) deadLetter(ctx context.Context, e redis.XMessage, deliveries int64, cause error) error {
	values := make(map[string]any, len(e.Values)+5)
	maps.Copy(values, e.Values)
	values["source_id"] = e.ID
	values["group"] = c.group
	values["consumer"] = c.name
	values["deliveries"] = deliveries
	values["error"] = cause.Error()
	dead := DeadLetterStream(c.stream)
	if _, err := c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.XAdd(ctx, &redis.XAddArgs{Stream: dead, MaxLen: c.cfg.maxLen, Approx: true, Values: values})
		p.XAck(ctx, c.stream, c.group, e.ID)
		return nil
	}); err != nil {
		return fmt.Errorf("outbox: dead-letter %s: %w", e.ID, err)
	}
	c.log.ErrorContext(ctx, "outbox: entry moved to the dead-letter stream", "entry_id", e.ID,
		"event_id", e.Values[fieldEventID], "type", e.Values[fieldType], "deliveries", deliveries,
		"err", cause, "dead_letter_stream", dead)
	return nil
}
