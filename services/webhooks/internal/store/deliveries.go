package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Attempt is one try of a delivery.
type Attempt struct {
	N          int
	At         time.Time
	StatusCode *int32
	Error      *string
	Duration   time.Duration
}

// Delivery is an event for an endpoint, with its attempts (oldest first).
type Delivery struct {
	OrgID, ID, EndpointID uuid.UUID
	EventType             string
	Status                string
	Round, AttemptCount   int
	NextAttemptAt         *time.Time
	CreatedAt             time.Time
	Attempts              []Attempt
}

// ListDeliveries answers up to limit of org's deliveries to endpoint, newest first, with
// their attempts.
func (s *Store) ListDeliveries(ctx context.Context, org, endpoint uuid.UUID, limit int) ([]Delivery, error) {
	rows, err := s.pool.Query(ctx, `SELECT organization_id, id, endpoint_id, event_type, status, round, attempt_count, next_attempt_at, created_at
		FROM deliveries WHERE organization_id = $1 AND endpoint_id = $2 ORDER BY id DESC LIMIT $3`, org, endpoint, limit)
	if err != nil {
		return nil, fmt.Errorf("list deliveries: %w", err)
	}
	ds, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Delivery, error) { return scanDelivery(r) })
	if err != nil {
		return nil, fmt.Errorf("list deliveries: %w", err)
	}
	if len(ds) == 0 {
		return ds, nil
	}
	ids := make([]uuid.UUID, len(ds))
	at := make(map[uuid.UUID]int, len(ds))
	for i, d := range ds {
		ids[i], at[d.ID] = d.ID, i
	}
	arows, err := s.pool.Query(ctx, `SELECT delivery_id, n, attempted_at, status_code, error, duration_ms FROM attempts
		WHERE organization_id = $1 AND delivery_id = ANY ($2) ORDER BY delivery_id, n`, org, ids)
	if err != nil {
		return nil, fmt.Errorf("list attempts: %w", err)
	}
	defer arows.Close()
	for arows.Next() {
		var (
			id uuid.UUID
			a  Attempt
			ms int32
		)
		if err := arows.Scan(&id, &a.N, &a.At, &a.StatusCode, &a.Error, &ms); err != nil {
			return nil, fmt.Errorf("list attempts: %w", err)
		}
		a.Duration = time.Duration(ms) * time.Millisecond
		ds[at[id]].Attempts = append(ds[at[id]].Attempts, a)
	}
	if err := arows.Err(); err != nil {
		return nil, fmt.Errorf("list attempts: %w", err)
	}
	return ds, nil
}

func scanDelivery(row pgx.Row) (Delivery, error) {
	var d Delivery
	err := row.Scan(&d.OrgID, &d.ID, &d.EndpointID, &d.EventType, &d.Status, &d.Round, &d.AttemptCount, &d.NextAttemptAt, &d.CreatedAt)
	return d, err
}

// Retry makes org's delivery id of endpoint pending again in a new round, due now, and
// enables the endpoint again (its failing streak starts over); it answers the delivery.
func Retry(ctx context.Context, tx pgx.Tx, org, endpoint, id uuid.UUID) (Delivery, error) {
	d, err := scanDelivery(tx.QueryRow(ctx, `UPDATE deliveries SET status = 'pending', round = round + 1, next_attempt_at = now()
		WHERE organization_id = $1 AND endpoint_id = $2 AND id = $3
		RETURNING organization_id, id, endpoint_id, event_type, status, round, attempt_count, next_attempt_at, created_at`, org, endpoint, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return Delivery{}, ErrNotFound
	}
	if err != nil {
		return Delivery{}, fmt.Errorf("retry delivery: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE endpoints SET disabled_at = NULL, disabled_reason = NULL, failing_since = NULL
		WHERE organization_id = $1 AND id = $2 AND disabled_at IS NOT NULL`, org, endpoint); err != nil {
		return Delivery{}, fmt.Errorf("enable endpoint: %w", err)
	}
	return d, nil
}

// Due is what an attempt needs: the delivery's state, body and target.
type Due struct {
	EndpointID   uuid.UUID
	Status       string
	Round        int
	AttemptCount int
	Payload      []byte
	CreatedAt    time.Time
	URL          string
	Key          []byte
	Disabled     bool
	// Failing is whether the endpoint is in a failing streak (no 2xx since its start).
	Failing bool
}

// LoadDue reads org's delivery id and its endpoint, or ErrNotFound (the endpoint was deleted).
func (s *Store) LoadDue(ctx context.Context, org, id uuid.UUID) (Due, error) {
	var d Due
	err := s.pool.QueryRow(ctx, `SELECT d.endpoint_id, d.status, d.round, d.attempt_count, d.payload, d.created_at, e.url, e.secret, e.disabled_at IS NOT NULL,
			e.failing_since IS NOT NULL
		FROM deliveries d JOIN endpoints e ON e.organization_id = d.organization_id AND e.id = d.endpoint_id
		WHERE d.organization_id = $1 AND d.id = $2`, org, id).
		Scan(&d.EndpointID, &d.Status, &d.Round, &d.AttemptCount, &d.Payload, &d.CreatedAt, &d.URL, &d.Key, &d.Disabled, &d.Failing)
	if errors.Is(err, pgx.ErrNoRows) {
		return Due{}, ErrNotFound
	}
	if err != nil {
		return Due{}, fmt.Errorf("load delivery: %w", err)
	}
	return d, nil
}

// Outcome is the result of one attempt.
type Outcome struct {
	At         time.Time
	StatusCode *int32
	Error      *string
	Duration   time.Duration
	// Next is when the next attempt is due; nil when there is none (succeeded, or given up).
	Next *time.Time
}

// Succeeded reports a 2xx.
func (o Outcome) Succeeded() bool { return o.Error == nil }

// RecordAttempt stores attempt n of org's delivery id (round), and the delivery's new state:
// succeeded, pending until o.Next, or failed. It answers false when the delivery moved on
// meanwhile (another round, deleted): the attempt is then not recorded.
func RecordAttempt(ctx context.Context, tx pgx.Tx, org, id uuid.UUID, round, n int, o Outcome) (bool, error) {
	status := StatusFailed
	switch {
	case o.Succeeded():
		status = StatusSucceeded
	case o.Next != nil:
		status = StatusPending
	}
	tag, err := tx.Exec(ctx, `UPDATE deliveries SET status = $4, attempt_count = $5, next_attempt_at = $6
		WHERE organization_id = $1 AND id = $2 AND round = $3 AND status = 'pending'`, org, id, round, status, n, o.Next)
	if err != nil {
		return false, fmt.Errorf("update delivery: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return false, nil
	}
	_, err = tx.Exec(ctx, `INSERT INTO attempts (organization_id, delivery_id, n, attempted_at, status_code, error, duration_ms)
		VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`, org, id, n, o.At, o.StatusCode, o.Error, o.Duration.Milliseconds())
	if err != nil {
		return false, fmt.Errorf("insert attempt: %w", err)
	}
	return true, nil
}

// GiveUp fails org's pending delivery id without an attempt: its endpoint is disabled.
func GiveUp(ctx context.Context, db DB, org, id uuid.UUID, round int) error {
	if _, err := db.Exec(ctx, `UPDATE deliveries SET status = 'failed', next_attempt_at = NULL
		WHERE organization_id = $1 AND id = $2 AND round = $3 AND status = 'pending'`, org, id, round); err != nil {
		return fmt.Errorf("give up delivery: %w", err)
	}
	return nil
}

// EndpointHealthy ends org's endpoint's failing streak.
func EndpointHealthy(ctx context.Context, db DB, org, endpoint uuid.UUID) error {
	if _, err := db.Exec(ctx, `UPDATE endpoints SET failing_since = NULL
		WHERE organization_id = $1 AND id = $2 AND failing_since IS NOT NULL`, org, endpoint); err != nil {
		return fmt.Errorf("endpoint healthy: %w", err)
	}
	return nil
}

// EndpointFailed starts or continues org's endpoint's failing streak at now, and disables
// it, saying why, once the streak is longer than disableAfter. It answers whether this call
// disabled it.
func EndpointFailed(ctx context.Context, db DB, org, endpoint uuid.UUID, now time.Time, disableAfter time.Duration, lastError string) (bool, error) {
	var disabled bool
	err := db.QueryRow(ctx, `UPDATE endpoints SET failing_since = coalesce(failing_since, $3),
			disabled_at = CASE WHEN disabled_at IS NULL AND failing_since <= $3 - $4::interval THEN $3 ELSE disabled_at END,
			disabled_reason = CASE WHEN disabled_at IS NULL AND failing_since <= $3 - $4::interval
				THEN 'no successful delivery since ' || to_char(failing_since AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') || '; last attempt: ' || $5
				ELSE disabled_reason END
		WHERE organization_id = $1 AND id = $2
		RETURNING coalesce(disabled_at = $3, false)`, org, endpoint, now, disableAfter, lastError).Scan(&disabled)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("endpoint failed: %w", err)
	}
	return disabled, nil
}
