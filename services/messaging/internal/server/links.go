package server

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/outbox"
	"github.com/chorus-sms/chorus/pkg/tenant"
	"github.com/chorus-sms/chorus/pkg/textlinks"
	eventsv1 "github.com/chorus-sms/chorus/proto/gen/go/events/v1"
	messagingv1 "github.com/chorus-sms/chorus/proto/gen/go/messaging/v1"
	orgsv1 "github.com/chorus-sms/chorus/proto/gen/go/orgs/v1"
	"github.com/chorus-sms/chorus/services/messaging/internal/links"
	"github.com/chorus-sms/chorus/services/messaging/internal/store"
)

// EventLinkClicked is the outbox event type of LinkClicked.
const EventLinkClicked = "link.clicked"

// Bounds of one ShortenLinks call.
const (
	maxShortenURLs = 1000
	maxSourceID    = 200
	// codeAttempts bounds the retries of a batch whose fresh codes collided with existing ones
	// (62^8 codes: a collision is already rare, three in a row means something else is wrong).
	codeAttempts = 3
)

// FollowShortLink counts a click and returns the original URL. The click and its link.clicked
// event are one transaction, so every counted click is published once and the redirect waits
// for no other service.
func (s *Server) FollowShortLink(ctx context.Context, req *messagingv1.FollowShortLinkRequest) (*messagingv1.FollowShortLinkResponse, error) {
	if !links.ValidCode(req.GetCode()) {
		return nil, apierr.NotFound("no such link")
	}
	ua := req.GetUserAgent()
	if len(ua) > 512 {
		ua = strings.ToValidUTF8(ua[:512], "")
	}
	var link store.Link
	err := s.cfg.Store.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		link, err = s.cfg.Store.FollowLink(ctx, tx, req.GetCode(), ua, func(l store.Link) error {
			ev := &eventsv1.LinkClicked{
				OrganizationId: l.OrgID.String(),
				Code:           req.GetCode(),
				SourceKind:     l.Source.Kind,
				SourceId:       l.Source.ID,
				ClickedAt:      timestamppb.New(time.Now()),
				UserAgent:      ua,
			}
			if l.MessageID != nil {
				ev.MessageId = l.MessageID.String()
			}
			return outbox.Enqueue(ctx, tx, outbox.Event{Type: EventLinkClicked, OrgID: l.OrgID, Payload: ev})
		})
		return err
	})
	if err != nil {
		return nil, notFound(err, "no such link")
	}
	return &messagingv1.FollowShortLinkResponse{Url: link.URL}, nil
}

// ShortenLinks returns the organization's short link of each URL for a source, creating the
// missing ones; the same (source, URL) always gets the same code.
func (s *Server) ShortenLinks(ctx context.Context, req *messagingv1.ShortenLinksRequest) (*messagingv1.ShortenLinksResponse, error) {
	org, err := tenant.RequireWrite(ctx)
	if err != nil {
		return nil, err
	}
	if err := validateShorten(req); err != nil {
		return nil, err
	}
	o, err := s.cfg.Orgs.Organization(ctx, org)
	if err != nil {
		return nil, err
	}
	src := store.Source{Kind: req.GetSourceKind(), ID: req.GetSourceId()}
	var codes map[string]string
	for range codeAttempts {
		codes, err = s.cfg.Store.SourceLinks(ctx, org, src, req.GetUrls(), links.NewCode)
		if !errors.Is(err, store.ErrCodeTaken) {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	base := s.linkBase(o)
	out := make([]string, len(req.GetUrls()))
	for i, u := range req.GetUrls() {
		out[i] = base + codes[u]
	}
	return &messagingv1.ShortenLinksResponse{ShortUrls: out}, nil
}

// validateShorten checks a ShortenLinks request, naming the field at fault.
func validateShorten(req *messagingv1.ShortenLinksRequest) error {
	f := apierr.Fields{}
	switch req.GetSourceKind() {
	case store.SourceCampaign, store.SourcePoll, store.SourceTest:
	default:
		f.Add("sourceKind", "must be campaign, poll or test")
	}
	if id := req.GetSourceId(); id == "" || len(id) > maxSourceID || !utf8.ValidString(id) {
		f.Add("sourceId", fmt.Sprintf("must be 1 to %d bytes of text", maxSourceID))
	}
	if n := len(req.GetUrls()); n == 0 || n > maxShortenURLs {
		f.Add("urls", fmt.Sprintf("must hold 1 to %d URLs", maxShortenURLs))
	}
	for i, u := range req.GetUrls() {
		if !linkTarget(u) {
			f.Add(fmt.Sprintf("urls[%d]", i), fmt.Sprintf("must be an absolute http(s) URL of at most %d bytes", textlinks.MaxURLBytes))
		}
	}
	return f.Err()
}

// linkTarget reports whether u can be a short link's target.
func linkTarget(u string) bool {
	if len(u) > textlinks.MaxURLBytes || !utf8.ValidString(u) || strings.ContainsRune(u, 0) {
		return false
	}
	p, err := url.Parse(u)
	return err == nil && (p.Scheme == "http" || p.Scheme == "https") && p.Host != ""
}

// linkBase is the start of the organization's short links, up to the code: its short-link
// base URL, else the public URL, then "/l/".
func (s *Server) linkBase(o *orgsv1.Organization) string {
	base := strings.TrimRight(o.GetShortLinkBaseUrl(), "/")
	if base == "" {
		base = strings.TrimRight(s.cfg.PublicURL, "/")
	}
	return base + "/l/"
}

// shorten replaces the URLs of a reply's text with short links of their own and returns the
// links by code.
func (s *Server) shorten(o *orgsv1.Organization, text string) (string, map[string]string, error) {
	base := s.linkBase(o)
	short := map[string]string{}
	out, err := textlinks.Rewrite(text, func(target string) (string, error) {
		code, err := links.NewCode()
		if err != nil {
			return "", err
		}
		short[code] = target
		return base + code, nil
	})
	if err != nil {
		return "", nil, fmt.Errorf("shorten links: %w", err)
	}
	return out, short, nil
}
