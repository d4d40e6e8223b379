package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/chorus-sms/chorus/pkg/sqllike"
)

// Conversation is one thread of an organization with a contact phone.
type Conversation struct {
	Phone         string
	LastMessage   string
	LastMessageAt time.Time
	LastDirection string
	UnreadCount   int32
	IsArchived    bool
	IsStarred     bool
}

const conversationColumns = `phone, last_message, last_message_at, last_direction, unread_count, is_archived, is_starred`

func scanConversation(row pgx.Row) (Conversation, error) {
	var c Conversation
	err := row.Scan(&c.Phone, &c.LastMessage, &c.LastMessageAt, &c.LastDirection, &c.UnreadCount, &c.IsArchived, &c.IsStarred)
	if errors.Is(err, pgx.ErrNoRows) {
		return Conversation{}, ErrNotFound
	}
	if err != nil {
		return Conversation{}, fmt.Errorf("scan conversation: %w", err)
	}
	return c, nil
}

// ConversationFilter selects threads; zero values select everything not archived.
type ConversationFilter struct {
	Unread          bool
	Unresponded     bool
	IncludeArchived bool
	// Search, when set, keeps threads whose phone contains SearchDigits or is one of
	// SearchPhones (the phones of contacts whose name matches).
	Search       bool
	SearchDigits string
	SearchPhones []string
	// After, when set, keeps the threads that come after it in the list's order.
	After *ConversationKey
	Limit int
}

// ConversationKey is where a page of threads ends: the list is ordered by last message time,
// latest first, then by phone.
type ConversationKey struct {
	At    time.Time `json:"t"`
	Phone string    `json:"p"`
}

// Conversations lists org's threads, most recent first.
func (s *Store) Conversations(ctx context.Context, org uuid.UUID, f ConversationFilter) ([]Conversation, error) {
	where := []string{`organization_id = $1`}
	args := []any{org}
	if !f.IncludeArchived {
		where = append(where, `NOT is_archived`)
	}
	if f.Unread {
		where = append(where, `unread_count > 0`)
	}
	if f.Unresponded {
		where = append(where, `last_direction = 'incoming'`)
	}
	if f.Search {
		args = append(args, f.SearchPhones)
		cond := fmt.Sprintf(`phone = ANY($%d)`, len(args))
		if f.SearchDigits != "" {
			args = append(args, sqllike.Contains(f.SearchDigits))
			cond += fmt.Sprintf(` OR phone LIKE $%d ESCAPE '\'`, len(args))
		}
		where = append(where, "("+cond+")")
	}
	if f.After != nil {
		args = append(args, f.After.At, f.After.Phone)
		where = append(where, fmt.Sprintf(`(last_message_at < $%d OR (last_message_at = $%d AND phone > $%d))`, len(args)-1, len(args)-1, len(args)))
	}
	q := `SELECT ` + conversationColumns + ` FROM conversations WHERE ` + strings.Join(where, " AND ") +
		fmt.Sprintf(` ORDER BY last_message_at DESC, phone LIMIT %d`, f.Limit)
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list conversations: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Conversation, error) { return scanConversation(r) })
	if err != nil {
		return nil, fmt.Errorf("list conversations: %w", err)
	}
	return list, nil
}

// MarkRead zeroes the thread's unread count.
func (s *Store) MarkRead(ctx context.Context, org uuid.UUID, phone string) (Conversation, error) {
	return scanConversation(s.pool.QueryRow(ctx, `UPDATE conversations SET unread_count = 0
		WHERE organization_id = $1 AND phone = $2 RETURNING `+conversationColumns, org, phone))
}

// UpdateConversation sets the flags that are not nil.
func (s *Store) UpdateConversation(ctx context.Context, org uuid.UUID, phone string, archived, starred *bool) (Conversation, error) {
	return scanConversation(s.pool.QueryRow(ctx, `UPDATE conversations SET
			is_archived = coalesce($3, is_archived), is_starred = coalesce($4, is_starred)
		WHERE organization_id = $1 AND phone = $2 RETURNING `+conversationColumns, org, phone, archived, starred))
}
