// Package outbox carries domain events from the service that records them to the services
// that react to them, without losing one and without letting a duplicate change anything.
//
// A producer writes events with [Enqueue] in the same transaction as the change they describe,
// so an event exists exactly when its change committed; a trigger writes its id to
// outbox_pending in the same statement. A [Relay] moves committed rows, in id order, onto the
// producer's Redis Stream ([StreamName]) and deletes their ids from outbox_pending; the rows
// themselves are never updated. It finds new rows by polling outbox_pending (every 100ms by
// default, and again at once after a full batch) rather than by LISTEN/NOTIFY: a poll costs
// one index probe, needs no dedicated connection, and avoids the database-wide lock NOTIFY
// takes at commit.
//
// A [Consumer] reads a stream in a consumer group and runs its [Handler] in a transaction that
// first records the event id in processed_events, then acknowledges the entry. The entries of
// one read share a transaction (one commit, one acknowledgement), each under a savepoint of
// its own, so a failing handler rolls back only its own event; a consumer given a batch handler
// ([WithBatchHandler]) applies a read's new events in one call instead, and falls back to one
// at a time when that fails. Publishing is
// at least once (a relay that dies between XADD and commit publishes again) and so is delivery
// (a consumer that dies before XACK is redelivered to); that record makes the effect happen
// once. Events of the types a consumer names [WithIdempotent] get no record: its handler makes
// a repeat change nothing. Failed entries stay pending and are retried with exponential backoff; entries left by
// a consumer that went quiet are claimed by the others; an entry whose handler keeps failing
// is moved to the dead-letter stream ([DeadLetterStream]) so it cannot stall its group.
// Consumers need Redis 6.2 or later (XPENDING with IDLE).
//
// Order is not guaranteed: rows commit out of id order (a row committed after rows with higher
// ids were published waits up to a second), several relays publish concurrently, and retried
// entries are handled after later ones. Handlers check state instead of assuming
// an order (a contact.updated that arrives after contact.deleted finds no contact).
//
// Rows are kept after publishing so a stream can be rebuilt: insert their ids into
// outbox_pending and the relay publishes them again, while consumers skip what they already
// processed. Each Run deletes published outbox rows and processed_events rows older than the
// retention ([WithRetention]) hourly.
package outbox
