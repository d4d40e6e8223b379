package outbox_test

import (
	"context"
	"fmt"
	"os"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/chorus-sms/chorus/pkg/outbox"
)

// A producer records an event in the transaction of its change and runs a relay; a consumer
// in another service applies each event once, in its own transaction.
func Example() {
	ctx := context.Background()
	var (
		contactsDB  *pgxpool.Pool // pgdb.Open(ctx, dsn, "contacts"): holds outbox
		messagingDB *pgxpool.Pool // pgdb.Open(ctx, dsn, "messaging"): holds processed_events
		rdb         *redis.Client
		orgID       uuid.UUID
		contactID   = "0199f5a4-7c1e-7d3a-9b1e-2f5c8d6a4e10"
	)
	stream := outbox.StreamName("contacts")

	// Producer, inside the transaction that deletes the contact. Real events carry their
	// message from proto/events/v1 (eventsv1.ContactDeleted); a wrapper keeps this short.
	_ = pgx.BeginFunc(ctx, contactsDB, func(tx pgx.Tx) error {
		// ... DELETE FROM contacts ...
		return outbox.Enqueue(ctx, tx, outbox.Event{Type: "contact.deleted", OrgID: orgID, Payload: wrapperspb.String(contactID)})
	})

	// Background work of the two services.
	hostname, _ := os.Hostname()
	g, ctx := errgroup.WithContext(ctx)
	relay := outbox.NewRelay(contactsDB, rdb, stream)
	consumer := outbox.NewConsumer(messagingDB, rdb, stream, "messaging", fmt.Sprintf("%s-%d", hostname, os.Getpid()),
		func(ctx context.Context, tx pgx.Tx, m outbox.Message) error {
			if m.Type != "contact.deleted" {
				return nil // not an event this service reacts to
			}
			var id wrapperspb.StringValue
			if err := m.Unmarshal(&id); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `DELETE FROM conversations WHERE organization_id = $1 AND contact_id = $2`, m.OrgID, id.GetValue())
			return err
		})
	g.Go(func() error { return relay.Run(ctx) })
	g.Go(func() error { return consumer.Run(ctx) })
	_ = g.Wait() // nil after shutdown; an error when a table or Redis was missing at start
}
