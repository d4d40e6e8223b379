// Package store keeps the webhooks schema: endpoints, deliveries (one event for one endpoint)
// and their attempts. Every query filters on the organization, which leads every key.
package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrNotFound is an endpoint or delivery the organization does not have.
var ErrNotFound = errors.New("not found")

// Delivery statuses.
const (
	StatusPending   = "pending"
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
)

// DB is a pool or a transaction.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Store reads and writes the webhooks schema.
type Store struct{ pool *pgxpool.Pool }

// New returns a Store over pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Pool is the store's pool, for transactions that also insert jobs.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Endpoint is a registered URL.
type Endpoint struct {
	OrgID, ID      uuid.UUID
	URL            string
	Events         []string
	Key            []byte
	DisabledAt     *time.Time
	DisabledReason *string
	CreatedAt      time.Time
}

// CreateEndpoint stores e and sets its CreatedAt.
func (s *Store) CreateEndpoint(ctx context.Context, e *Endpoint) error {
	err := s.pool.QueryRow(ctx, `INSERT INTO endpoints (organization_id, id, url, events, secret) VALUES ($1, $2, $3, $4, $5)
		RETURNING created_at`, e.OrgID, e.ID, e.URL, e.Events, e.Key).Scan(&e.CreatedAt)
	if err != nil {
		return fmt.Errorf("insert endpoint: %w", err)
	}
	return nil
}

const endpointColumns = `organization_id, id, url, events, secret, disabled_at, disabled_reason, created_at`

func scanEndpoint(row pgx.Row) (Endpoint, error) {
	var e Endpoint
	err := row.Scan(&e.OrgID, &e.ID, &e.URL, &e.Events, &e.Key, &e.DisabledAt, &e.DisabledReason, &e.CreatedAt)
	return e, err
}

// ListEndpoints answers org's endpoints, newest first.
func (s *Store) ListEndpoints(ctx context.Context, org uuid.UUID) ([]Endpoint, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+endpointColumns+` FROM endpoints WHERE organization_id = $1 ORDER BY id DESC`, org)
	if err != nil {
		return nil, fmt.Errorf("list endpoints: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Endpoint, error) { return scanEndpoint(r) })
	if err != nil {
		return nil, fmt.Errorf("list endpoints: %w", err)
	}
	return out, nil
}

// GetEndpoint answers org's endpoint id, or ErrNotFound.
func (s *Store) GetEndpoint(ctx context.Context, org, id uuid.UUID) (Endpoint, error) {
	e, err := scanEndpoint(s.pool.QueryRow(ctx, `SELECT `+endpointColumns+` FROM endpoints WHERE organization_id = $1 AND id = $2`, org, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return Endpoint{}, ErrNotFound
	}
	if err != nil {
		return Endpoint{}, fmt.Errorf("get endpoint: %w", err)
	}
	return e, nil
}

// DeleteEndpoint removes org's endpoint id with its deliveries, or answers ErrNotFound.
func (s *Store) DeleteEndpoint(ctx context.Context, org, id uuid.UUID) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM endpoints WHERE organization_id = $1 AND id = $2`, org, id)
	if err != nil {
		return fmt.Errorf("delete endpoint: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// Subscribed answers org's enabled endpoints that take eventType.
func Subscribed(ctx context.Context, db DB, org uuid.UUID, eventType string) ([]uuid.UUID, error) {
	rows, err := db.Query(ctx, `SELECT id FROM endpoints
		WHERE organization_id = $1 AND $2 = ANY (events) AND disabled_at IS NULL`, org, eventType)
	if err != nil {
		return nil, fmt.Errorf("subscribed endpoints: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fmt.Errorf("subscribed endpoints: %w", err)
	}
	return ids, nil
}

// OrgsWithEndpoints says which of orgs have at least one enabled endpoint.
func OrgsWithEndpoints(ctx context.Context, db DB, orgs []uuid.UUID) (map[uuid.UUID]bool, error) {
	rows, err := db.Query(ctx, `SELECT DISTINCT organization_id FROM endpoints
		WHERE organization_id = ANY ($1) AND disabled_at IS NULL`, orgs)
	if err != nil {
		return nil, fmt.Errorf("organizations with endpoints: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fmt.Errorf("organizations with endpoints: %w", err)
	}
	with := make(map[uuid.UUID]bool, len(ids))
	for _, id := range ids {
		with[id] = true
	}
	return with, nil
}

// NewDelivery is one event for one endpoint.
type NewDelivery struct {
	ID, Endpoint uuid.UUID
}

// InsertDeliveries stores the event (key, type, payload) for each of ds's endpoints and
// answers the ones that were new: a redelivered event's are already there.
func InsertDeliveries(ctx context.Context, db DB, org uuid.UUID, key, eventType string, payload []byte, ds []NewDelivery) ([]uuid.UUID, error) {
	ids, endpoints := make([]uuid.UUID, len(ds)), make([]uuid.UUID, len(ds))
	for i, d := range ds {
		ids[i], endpoints[i] = d.ID, d.Endpoint
	}
	rows, err := db.Query(ctx, `INSERT INTO deliveries (organization_id, id, endpoint_id, event_key, event_type, payload, next_attempt_at)
		SELECT $1, d.id, d.endpoint, $4, $5, $6, now() FROM unnest($2::uuid[], $3::uuid[]) AS d (id, endpoint)
		ON CONFLICT (organization_id, endpoint_id, event_key) DO NOTHING RETURNING id`, org, ids, endpoints, key, eventType, payload)
	if err != nil {
		return nil, fmt.Errorf("insert deliveries: %w", err)
	}
	created, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fmt.Errorf("insert deliveries: %w", err)
	}
	return created, nil
}
