// Package server is the analytics gRPC API: it reads the request's date range in the
// organization's zone and answers from the rollups (internal/store) and, for contact totals,
// from contacts.
package server

import (
	"context"
	"strconv"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/clients/contacts"
	"github.com/chorus-sms/chorus/pkg/tenant"
	analyticsv1 "github.com/chorus-sms/chorus/proto/gen/go/analytics/v1"
	"github.com/chorus-sms/chorus/services/analytics/internal/csvexport"
	"github.com/chorus-sms/chorus/services/analytics/internal/daterange"
	"github.com/chorus-sms/chorus/services/analytics/internal/orgzone"
	"github.com/chorus-sms/chorus/services/analytics/internal/store"
)

// The spec's windows and limits.
const (
	defaultDays         = 30 // back from endDate
	defaultSendTimeDays = 90 // best-send-times
	defaultTop          = 10
	maxTop              = 100
)

// Config is what the server reads from.
type Config struct {
	Store    *store.Store
	Zones    *orgzone.Zones
	Contacts *contacts.Client
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Server implements analyticsv1.AnalyticsServiceServer.
type Server struct {
	analyticsv1.UnimplementedAnalyticsServiceServer
	cfg Config
}

// New returns a Server over cfg.
func New(cfg Config) *Server {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Server{cfg: cfg}
}

// scope is the calling organization and its parsed range.
func (s *Server) scope(ctx context.Context, start, end string, back int) (uuid.UUID, store.Range, error) {
	org, err := tenant.Org(ctx)
	if err != nil {
		return uuid.Nil, store.Range{}, err
	}
	loc, err := s.cfg.Zones.Of(ctx, org)
	if err != nil {
		return uuid.Nil, store.Range{}, err
	}
	r, err := daterange.Parse(start, end, back, loc, s.cfg.Now())
	if err != nil {
		return uuid.Nil, store.Range{}, err
	}
	return org, store.Range{Start: r.Start, End: r.End}, nil
}

// GetOverview sums the range. Contacts are counted now by contacts (they have no date).
func (s *Server) GetOverview(ctx context.Context, req *analyticsv1.GetOverviewRequest) (*analyticsv1.GetOverviewResponse, error) {
	org, r, err := s.scope(ctx, req.GetStartDate(), req.GetEndDate(), defaultDays)
	if err != nil {
		return nil, err
	}
	o, err := s.cfg.Store.Overview(ctx, org, r)
	if err != nil {
		return nil, err
	}
	c, err := s.cfg.Contacts.Count(ctx, org)
	if err != nil {
		return nil, err
	}
	m, cs := o.Messages, o.Campaigns
	return &analyticsv1.GetOverviewResponse{
		DateRange: &analyticsv1.DateRange{Start: r.Start.Format(time.DateOnly), End: r.End.Format(time.DateOnly)},
		Campaigns: &analyticsv1.CampaignCounts{Total: cs.Total, Completed: cs.Completed, Sending: cs.Sending, Scheduled: cs.Scheduled, Failed: cs.Failed},
		Messages:  &analyticsv1.MessageCounts{Total: m.Total, Sent: m.Sent, Delivered: m.Delivered, Failed: m.Failed, Received: m.Received},
		Contacts:  &analyticsv1.ContactCounts{Total: c.GetTotal(), Textable: c.GetTextable(), OptedOut: c.GetOptedOut()},
		// The spec's definition: delivered out of every outgoing message of the range.
		DeliveryRate: store.Rate(m.Delivered, m.Total),
		Clicks:       &analyticsv1.ClickCounts{Human: o.Clicks.Human, Previews: o.Clicks.Previews},
	}, nil
}

// GetTrends answers every day of the range, oldest first, zeros where nothing happened.
func (s *Server) GetTrends(ctx context.Context, req *analyticsv1.GetTrendsRequest) (*analyticsv1.GetTrendsResponse, error) {
	metric := req.GetMetric()
	if metric == "" {
		metric = "messages"
	}
	if metric != "messages" && metric != "campaigns" {
		return nil, apierr.Field("metric", "must be messages or campaigns")
	}
	org, r, err := s.scope(ctx, req.GetStartDate(), req.GetEndDate(), defaultDays)
	if err != nil {
		return nil, err
	}
	items := make([]*analyticsv1.TrendPoint, 0, int(r.End.Sub(r.Start).Hours()/24)+1)
	if metric == "messages" {
		days, err := s.cfg.Store.MessageDays(ctx, org, r)
		if err != nil {
			return nil, err
		}
		for d := r.Start; !d.After(r.End); d = d.AddDate(0, 0, 1) {
			m := days[d]
			items = append(items, &analyticsv1.TrendPoint{Date: d.Format(time.DateOnly), Total: m.Total, Failed: m.Failed, Sent: &m.Sent, Delivered: &m.Delivered})
		}
	} else {
		days, err := s.cfg.Store.CampaignDays(ctx, org, r)
		if err != nil {
			return nil, err
		}
		for d := r.Start; !d.After(r.End); d = d.AddDate(0, 0, 1) {
			c := days[d]
			items = append(items, &analyticsv1.TrendPoint{Date: d.Format(time.DateOnly), Total: c.Total, Failed: c.Failed, Completed: &c.Completed, Sending: &c.Sending})
		}
	}
	return &analyticsv1.GetTrendsResponse{Items: items}, nil
}

// GetTopCampaigns ranks the completed campaigns created in the range by delivery rate.
func (s *Server) GetTopCampaigns(ctx context.Context, req *analyticsv1.GetTopCampaignsRequest) (*analyticsv1.GetTopCampaignsResponse, error) {
	limit := defaultTop
	if req.Limit != nil {
		if l := req.GetLimit(); l < 1 || l > maxTop {
			return nil, apierr.Field("limit", "must be 1 to "+strconv.Itoa(maxTop))
		}
		limit = int(req.GetLimit())
	}
	org, r, err := s.scope(ctx, req.GetStartDate(), req.GetEndDate(), defaultDays)
	if err != nil {
		return nil, err
	}
	cs, err := s.cfg.Store.TopCampaigns(ctx, org, r, limit)
	if err != nil {
		return nil, err
	}
	out := make([]*analyticsv1.TopCampaign, len(cs))
	for i, c := range cs {
		out[i] = &analyticsv1.TopCampaign{
			Id: c.ID.String(), Name: c.Name, CreatedAt: timestamppb.New(c.CreatedAt), TotalCount: c.TotalCount,
			SentCount: c.Sent, DeliveredCount: c.Delivered, FailedCount: c.Failed, DeliveryRate: c.DeliveryRate(),
		}
	}
	return &analyticsv1.GetTopCampaignsResponse{Campaigns: out}, nil
}

// GetBestSendTimes answers all 24 hours and all 7 days of the week, in order.
func (s *Server) GetBestSendTimes(ctx context.Context, req *analyticsv1.GetBestSendTimesRequest) (*analyticsv1.GetBestSendTimesResponse, error) {
	org, r, err := s.scope(ctx, req.GetStartDate(), req.GetEndDate(), defaultSendTimeDays)
	if err != nil {
		return nil, err
	}
	byHour, byDay, err := s.cfg.Store.SendTimes(ctx, org, r)
	if err != nil {
		return nil, err
	}
	res := &analyticsv1.GetBestSendTimesResponse{}
	for h, n := range byHour {
		res.ByHour = append(res.ByHour, &analyticsv1.HourBucket{Hour: int32(h), TotalSent: n.Sent, Delivered: n.Delivered, DeliveryRate: store.Rate(n.Delivered, n.Sent)})
	}
	for d, n := range byDay {
		res.ByDayOfWeek = append(res.ByDayOfWeek, &analyticsv1.DayBucket{DayOfWeek: int32(d), TotalSent: n.Sent, Delivered: n.Delivered, DeliveryRate: store.Rate(n.Delivered, n.Sent)})
	}
	return res, nil
}

// ExportCampaigns answers the campaigns created in the range as CSV, newest first.
func (s *Server) ExportCampaigns(ctx context.Context, req *analyticsv1.ExportCampaignsRequest) (*analyticsv1.ExportCampaignsResponse, error) {
	if req.GetType() != "campaigns" {
		return nil, apierr.Field("type", "must be campaigns")
	}
	org, r, err := s.scope(ctx, req.GetStartDate(), req.GetEndDate(), defaultDays)
	if err != nil {
		return nil, err
	}
	cs, err := s.cfg.Store.Campaigns(ctx, org, r)
	if err != nil {
		return nil, err
	}
	body, err := csvexport.Campaigns(cs)
	if err != nil {
		return nil, err
	}
	return &analyticsv1.ExportCampaignsResponse{
		Filename: "campaigns-" + r.Start.Format(time.DateOnly) + "-to-" + r.End.Format(time.DateOnly) + ".csv",
		Csv:      body,
	}, nil
}
