package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/clients"
	"github.com/chorus-sms/chorus/pkg/phone"
	"github.com/chorus-sms/chorus/pkg/tenant"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
	messagingv1 "github.com/chorus-sms/chorus/proto/gen/go/messaging/v1"
	"github.com/chorus-sms/chorus/services/messaging/internal/store"
)

// Page sizes of the conversation list and of a thread's messages.
const (
	defaultConversations = 100
	maxConversations     = 500
	defaultMessages      = 50
	maxMessages          = 200
	// nameMatches bounds how many contacts a name search considers.
	nameMatches = 200
)

// ListConversations lists a page of threads, most recent first.
func (s *Server) ListConversations(ctx context.Context, req *messagingv1.ListConversationsRequest) (*messagingv1.ListConversationsResponse, error) {
	org, err := tenant.Org(ctx)
	if err != nil {
		return nil, err
	}
	f := store.ConversationFilter{
		Unread: req.GetUnread(), Unresponded: req.GetUnresponded(), IncludeArchived: req.GetIncludeArchived(),
		Limit: int(req.GetLimit()),
	}
	switch {
	case f.Limit == 0:
		f.Limit = defaultConversations
	case f.Limit < 1 || f.Limit > maxConversations:
		return nil, apierr.Field("limit", "must be between 1 and 500")
	}
	if req.GetCursor() != "" {
		var k conversationsCursor
		if err := s.cfg.Cursors.Decode(req.GetCursor(), &k); err != nil || k.Org != org {
			return nil, apierr.Field("cursor", "is not a cursor of this list")
		}
		f.After = &k.ConversationKey
	}
	if q := strings.TrimSpace(req.GetSearch()); q != "" {
		if err := s.searchFilter(ctx, org, q, &f); err != nil {
			return nil, err
		}
	}
	limit := f.Limit
	f.Limit++ // one more tells whether a next page exists
	list, err := s.cfg.Store.Conversations(ctx, org, f)
	if err != nil {
		return nil, err
	}
	resp := &messagingv1.ListConversationsResponse{}
	if len(list) > limit {
		list = list[:limit]
		last := list[limit-1]
		c, err := s.cfg.Cursors.Encode(conversationsCursor{Org: org, ConversationKey: store.ConversationKey{At: last.LastMessageAt, Phone: last.Phone}})
		if err != nil {
			return nil, err
		}
		resp.Cursor = c
	}
	phones := make([]string, len(list))
	for i, c := range list {
		phones[i] = c.Phone
	}
	known, err := s.contactsByPhone(ctx, org, phones)
	if err != nil {
		return nil, err
	}
	resp.Conversations = make([]*messagingv1.Conversation, len(list))
	for i, c := range list {
		resp.Conversations[i] = toConversation(c, known[c.Phone])
	}
	return resp, nil
}

// conversationsCursor is a page boundary of the thread list, bound to its organization.
type conversationsCursor struct {
	Org uuid.UUID `json:"o"`
	store.ConversationKey
}

// searchFilter matches threads by the digits of the query against the phone and, when the
// query has letters, by the names of the organization's contacts (through contacts' search).
func (s *Server) searchFilter(ctx context.Context, org uuid.UUID, q string, f *store.ConversationFilter) error {
	f.Search = true
	f.SearchDigits = phone.Digits(q)
	if !strings.ContainsFunc(q, unicode.IsLetter) {
		return nil
	}
	resp, err := s.cfg.Contacts.ListContacts(ctx, org, &contactsv1.ListContactsRequest{
		Search: q, HasPhone: wrapperspb.Bool(true), Limit: wrapperspb.Int32(nameMatches),
	})
	if errors.Is(err, clients.ErrInvalid) {
		return apierr.Field("search", "is too long to match names: at most 200 characters and 8 words")
	}
	if err != nil {
		return fmt.Errorf("search contacts: %w", err)
	}
	for _, c := range resp.GetContacts() {
		f.SearchPhones = append(f.SearchPhones, c.GetPhone())
	}
	// Letters alone never match a phone.
	if f.SearchDigits != "" && len(f.SearchDigits) < 3 {
		f.SearchDigits = ""
	}
	return nil
}

// ListMessages pages through a thread, newest first.
func (s *Server) ListMessages(ctx context.Context, req *messagingv1.ListMessagesRequest) (*messagingv1.ListMessagesResponse, error) {
	org, err := tenant.Org(ctx)
	if err != nil {
		return nil, err
	}
	p, err := threadPhone(req.GetPhoneNumber())
	if err != nil {
		return nil, err
	}
	limit := int(req.GetLimit())
	switch {
	case limit == 0:
		limit = defaultMessages
	case limit < 1 || limit > maxMessages:
		return nil, apierr.Field("limit", "must be between 1 and 200")
	}
	var after *store.ThreadKey
	if req.GetCursor() != "" {
		var k threadCursor
		if err := s.cfg.Cursors.Decode(req.GetCursor(), &k); err != nil || k.Org != org || k.Phone != p {
			return nil, apierr.Field("cursor", "is not a cursor of this thread")
		}
		after = &k.ThreadKey
	}
	o, err := s.cfg.Orgs.Organization(ctx, org)
	if err != nil {
		return nil, err
	}
	msgs, err := s.cfg.Store.Thread(ctx, org, p, after, limit+1)
	if err != nil {
		return nil, err
	}
	resp := &messagingv1.ListMessagesResponse{Timezone: o.GetTimezone()}
	if len(msgs) > limit {
		msgs = msgs[:limit]
		last := msgs[limit-1]
		c, err := s.cfg.Cursors.Encode(threadCursor{Org: org, Phone: p, ThreadKey: store.ThreadKey{At: last.ThreadAt, ID: last.ID}})
		if err != nil {
			return nil, err
		}
		resp.Cursor = c
	}
	resp.Messages = make([]*messagingv1.Message, len(msgs))
	for i, m := range msgs {
		resp.Messages[i] = toMessage(m)
	}
	return resp, nil
}

// threadCursor is a page boundary bound to its thread, so it cannot page another one.
type threadCursor struct {
	Org   uuid.UUID `json:"o"`
	Phone string    `json:"p"`
	store.ThreadKey
}

// MarkConversationRead zeroes a thread's unread count.
func (s *Server) MarkConversationRead(ctx context.Context, req *messagingv1.MarkConversationReadRequest) (*messagingv1.MarkConversationReadResponse, error) {
	org, err := tenant.RequireWrite(ctx)
	if err != nil {
		return nil, err
	}
	p, err := threadPhone(req.GetPhoneNumber())
	if err != nil {
		return nil, err
	}
	c, err := s.cfg.Store.MarkRead(ctx, org, p)
	if err != nil {
		return nil, notFound(err, "conversation not found")
	}
	conv, err := s.withContact(ctx, org, c)
	return &messagingv1.MarkConversationReadResponse{Conversation: conv}, err
}

// UpdateConversation archives, unarchives, stars or unstars a thread.
func (s *Server) UpdateConversation(ctx context.Context, req *messagingv1.UpdateConversationRequest) (*messagingv1.UpdateConversationResponse, error) {
	org, err := tenant.RequireWrite(ctx)
	if err != nil {
		return nil, err
	}
	p, err := threadPhone(req.GetPhoneNumber())
	if err != nil {
		return nil, err
	}
	c, err := s.cfg.Store.UpdateConversation(ctx, org, p, req.IsArchived, req.IsStarred)
	if err != nil {
		return nil, notFound(err, "conversation not found")
	}
	conv, err := s.withContact(ctx, org, c)
	return &messagingv1.UpdateConversationResponse{Conversation: conv}, err
}

func (s *Server) withContact(ctx context.Context, org uuid.UUID, c store.Conversation) (*messagingv1.Conversation, error) {
	known, err := s.contactsByPhone(ctx, org, []string{c.Phone})
	if err != nil {
		return nil, err
	}
	return toConversation(c, known[c.Phone]), nil
}

// GetMessage returns one message as its thread shows it; a malformed, missing or foreign id
// is NOT_FOUND.
func (s *Server) GetMessage(ctx context.Context, req *messagingv1.GetMessageRequest) (*messagingv1.GetMessageResponse, error) {
	org, err := tenant.Org(ctx)
	if err != nil {
		return nil, err
	}
	id, err := uuid.Parse(req.GetId())
	if err != nil {
		return nil, apierr.NotFound("message not found")
	}
	m, err := s.cfg.Store.Message(ctx, org, id)
	if err != nil {
		return nil, notFound(err, "message not found")
	}
	return &messagingv1.GetMessageResponse{Message: toMessage(m)}, nil
}
