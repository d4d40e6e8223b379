package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/uuid"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/httpcode"
	"github.com/chorus-sms/chorus/pkg/resource"
	"github.com/chorus-sms/chorus/pkg/tags"
	"github.com/chorus-sms/chorus/pkg/tenant"
	messagingv1 "github.com/chorus-sms/chorus/proto/gen/go/messaging/v1"
	"github.com/chorus-sms/chorus/services/messaging/internal/signup"
	"github.com/chorus-sms/chorus/services/messaging/internal/store"
)

var keywordKind = resource.Kind{Name: "keyword", Reason: apierr.ReasonNotFound, Missing: store.ErrNotFound}

// CreateKeyword validates and stores a sign-up keyword. Its confirmation is composed with the
// organization's name now, so one that would be over an outgoing text's limit is refused here
// rather than at a subscriber's sign-up.
func (s *Server) CreateKeyword(ctx context.Context, req *messagingv1.CreateKeywordRequest) (*messagingv1.CreateKeywordResponse, error) {
	org, err := tenant.RequireWrite(ctx)
	if err != nil {
		return nil, err
	}
	fields := apierr.Fields{}
	k := store.Keyword{OrgID: org, Confirmation: req.GetConfirmation()}
	var problem string
	if k.Word, problem = signup.Word(req.GetKeyword()); problem != "" {
		fields.Add("keyword", problem)
	}
	if k.Tag, problem = tags.Check(req.GetTag()); problem != "" {
		fields.Add("tag", problem)
	}
	if k.Frequency, problem = signup.Frequency(req.GetFrequency()); problem != "" {
		fields.Add("frequency", problem)
	}
	brand, err := s.brand(ctx, org)
	if err != nil {
		return nil, err
	}
	text := signup.Confirmation(brand, k.Confirmation, k.Frequency)
	switch {
	case strings.TrimSpace(k.Confirmation) == "":
		fields.Add("confirmation", "is required: the words a new subscriber is sent (the brand, frequency, rates notice and STOP/HELP are added unless it says them)")
	case signup.CheckLength(text) != "":
		fields.Add("confirmation", signup.CheckLength(text))
	}
	if err := fields.Err(); err != nil {
		return nil, err
	}
	if k.ID, err = uuid.NewV7(); err != nil {
		return nil, fmt.Errorf("keyword id: %w", err)
	}
	err = s.cfg.Store.InsertKeyword(ctx, &k)
	if errors.Is(err, store.ErrKeywordTaken) {
		return nil, apierr.New(codes.AlreadyExists, apierr.ReasonKeywordTaken, "the organization already has the keyword "+k.Word)
	}
	if err != nil {
		return nil, err
	}
	httpcode.Set(ctx, http.StatusCreated)
	return &messagingv1.CreateKeywordResponse{Keyword: toKeyword(&k, text)}, nil
}

// ListKeywords answers the organization's sign-up keywords, newest first, each with the
// confirmation a subscriber would be sent now.
func (s *Server) ListKeywords(ctx context.Context, _ *messagingv1.ListKeywordsRequest) (*messagingv1.ListKeywordsResponse, error) {
	org, err := tenant.Org(ctx)
	if err != nil {
		return nil, err
	}
	brand, err := s.brand(ctx, org)
	if err != nil {
		return nil, err
	}
	out, err := resource.List(ctx, s.cfg.Store.ListKeywords, func(k *store.Keyword) *messagingv1.Keyword {
		return toKeyword(k, signup.Confirmation(brand, k.Confirmation, k.Frequency))
	})
	if err != nil {
		return nil, err
	}
	return &messagingv1.ListKeywordsResponse{Keywords: out}, nil
}

// DeleteKeyword removes a sign-up keyword: a later text of it is an ordinary message.
func (s *Server) DeleteKeyword(ctx context.Context, req *messagingv1.DeleteKeywordRequest) (*messagingv1.DeleteKeywordResponse, error) {
	org, id, err := keywordKind.Target(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	if err := s.cfg.Store.DeleteKeyword(ctx, org, id); err != nil {
		return nil, keywordKind.StoreError(err)
	}
	return &messagingv1.DeleteKeywordResponse{Id: id.String(), Deleted: true}, nil
}

// brand is the organization's name, which confirmations name.
func (s *Server) brand(ctx context.Context, org uuid.UUID) (string, error) {
	o, err := s.cfg.Orgs.Organization(ctx, org)
	if err != nil {
		return "", fmt.Errorf("read organization for its brand: %w", err)
	}
	return o.GetName(), nil
}

func toKeyword(k *store.Keyword, text string) *messagingv1.Keyword {
	return &messagingv1.Keyword{
		Id: k.ID.String(), Keyword: k.Word, Tag: k.Tag, Confirmation: k.Confirmation, Frequency: k.Frequency,
		ConfirmationMessage: text, CreatedAt: timestamppb.New(k.CreatedAt),
	}
}
