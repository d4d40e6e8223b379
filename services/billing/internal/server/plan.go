package server

import (
	"context"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/chorus-sms/chorus/pkg/apierr"
	billingv1 "github.com/chorus-sms/chorus/proto/gen/go/billing/v1"
	"github.com/chorus-sms/chorus/services/billing/internal/store"
)

var intervals = []string{store.IntervalMonth, store.IntervalYear}

// SetPlan sets an organization's pricing model and included credits per period (an operator
// RPC).
func (s *Server) SetPlan(ctx context.Context, req *billingv1.SetPlanRequest) (*billingv1.SetPlanResponse, error) {
	fields := apierr.Fields{}
	p := store.Plan{
		OrganizationID: bodyID(fields, "organizationId", req.GetOrganizationId()),
		PricingModel:   oneOf(fields, "pricingModel", req.GetPricingModel(), "", pricingModels),
	}
	fullService := p.PricingModel == store.PricingFullService
	if fullService {
		n := req.GetIncludedPerPeriod()
		credits(fields, "includedPerPeriod", n, 1)
		p.IncludedPerPeriod = &n
	} else if req.GetIncludedPerPeriod() != 0 {
		fields.Add("includedPerPeriod", "included credits belong to full_service plans")
	}
	if v := req.GetBillingInterval(); v != "" || fullService {
		p.BillingInterval = oneOf(fields, "billingInterval", v, "", intervals)
	}
	p.CurrentPeriodEnd = timestamp(fields, "currentPeriodEnd", req.GetCurrentPeriodEnd())
	if err := fields.Err(); err != nil {
		return nil, err
	}
	plan, b, err := s.store.SetPlan(ctx, p, time.Now())
	if err != nil {
		return nil, storeError(err)
	}
	out := &billingv1.Plan{PricingModel: plan.PricingModel, BillingInterval: plan.BillingInterval}
	if plan.IncludedPerPeriod != nil {
		out.IncludedPerPeriod = *plan.IncludedPerPeriod
	}
	if plan.CurrentPeriodEnd != nil {
		out.CurrentPeriodEnd = timestamppb.New(*plan.CurrentPeriodEnd)
	}
	return &billingv1.SetPlanResponse{Plan: out, Credits: toCredits(b)}, nil
}

// timestamp checks an optional timestamp; nil when absent or invalid.
func timestamp(fields apierr.Fields, field string, ts *timestamppb.Timestamp) *time.Time {
	if ts == nil {
		return nil
	}
	if err := ts.CheckValid(); err != nil {
		fields.Add(field, "must be a valid timestamp")
		return nil
	}
	t := ts.AsTime()
	return &t
}
