package server

import (
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/chorus-sms/chorus/pkg/apierr"
	orgsv1 "github.com/chorus-sms/chorus/proto/gen/go/orgs/v1"
)

// shortLinks are the short links of queued messages: by message id, target URL by code.
type shortLinks map[uuid.UUID]map[string]string

// autoReplyText gives a campaign's auto-reply (message id, field its place in the request)
// the short links a reply would have, recorded in short, and checks its length as a reply's.
func (s *Server) autoReplyText(o *orgsv1.Organization, field string, id uuid.UUID, body string, short shortLinks) (string, error) {
	text, links, err := s.shorten(o, body)
	if err != nil {
		return "", err
	}
	if n := utf8.RuneCountInString(text); n > MaxMessageLength {
		return "", apierr.Field(field+".body", fmt.Sprintf("is %d characters once links are shortened; at most %d are sent", n, MaxMessageLength))
	}
	if len(links) > 0 {
		short[id] = links
	}
	return text, nil
}

// insertLinks stores, inside tx, the short links of the messages that were stored (a message
// deduplicated against an earlier one keeps that one's links).
func (s *Server) insertLinks(ctx context.Context, tx pgx.Tx, org uuid.UUID, stored []uuid.UUID, short shortLinks) error {
	for _, id := range stored {
		for code, target := range short[id] {
			if err := s.cfg.Store.InsertLink(ctx, tx, org, id, code, target); err != nil {
				return err
			}
		}
	}
	return nil
}
