// Package store is the messaging schema: sending numbers, the message log, conversations and
// short links. Every query is scoped by organization, except the lookups of public callbacks
// (an inbound message's To number, a status callback's message id, a short link's code) that
// are how the organization is found.
package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrNotFound is returned when a row does not exist in the organization.
var ErrNotFound = errors.New("not found")

// Store reads and writes the messaging schema.
type Store struct {
	pool *pgxpool.Pool
}

// New returns a store on pool, whose search_path is the messaging schema.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// InTx runs fn in a transaction, committed when fn returns nil.
func (s *Store) InTx(ctx context.Context, fn func(pgx.Tx) error) error {
	if err := pgx.BeginFunc(ctx, s.pool, fn); err != nil {
		return fmt.Errorf("messaging store: %w", err)
	}
	return nil
}
